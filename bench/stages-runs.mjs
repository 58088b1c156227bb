// Bench stage gate-run: `genjob gate --run big` over a run of 10,000 received jobs (each with its receipt
// and one output, as `genjob work` leaves them) next to `genjob status` over the same store. The gate
// verifies every ok receipt (the job, the receipt, out/ hashed), so it costs what `verify --all` does;
// status lists and reads receipts. Both sides' CPU time (user + sys, from /usr/bin/time), that of
// `verify --all` over the same jobs, and the load average are in the note: on a shared machine the
// wall-clock ratio moves with the load.
import { spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { canonical, makeJob, receivedJob, sha256 } from './fixtures.mjs';

export const RUN_STAGES = ['gate-run'];

export function runStages(tools) {
  const { QUICK, NODE, GENJOB, genjob, alternate, record, freshRepo, round } = tools;
  const JOBS = QUICK ? 2000 : 10_000;

  /**
   * `n` received jobs of one output each, sealed as run `big`: the manifest written as mint writes it, and
   * the user's seal beside it under a secret made for the stage in `cache` (the XDG_CACHE_HOME its
   * commands run with), as `genjob mint --run` seals it: HMAC-SHA256 over the manifest's sha256.
   */
  function receivedRun(root, cache, n) {
    const keys = [];
    for (let i = 0; i < n; i++) {
      const path = `f/${i}.txt`;
      const made = makeJob(`job ${i}`, [{ path, sha256: sha256(Buffer.from(`old ${i}\n`)) }]);
      const data = Buffer.from(`new ${i}\n`);
      receivedJob(root, made, [{ path, sha256: sha256(data), bytes: data.length }], (file) =>
        writeFileSync(file, data),
      );
      keys.push(made.key);
    }
    const template = { instruction: 'job {path}', also: [], reads: [], each: null };
    mkdirSync(join(root, '.gen', 'runs'), { recursive: true });
    const manifest = {
      schema: 'genjob/run@1',
      name: 'big',
      revision: 1,
      template,
      template_digest: sha256(canonical({ instruction: template.instruction, also: [], reads: [] })),
      expansion: keys.map((key) => ({ path: null, key })),
      keys,
      created_at: new Date().toISOString(),
    };
    const bytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    writeFileSync(join(root, '.gen', 'runs', 'big.json'), bytes);
    const secret = randomBytes(32);
    mkdirSync(join(cache, 'genjob'), { recursive: true, mode: 0o700 });
    writeFileSync(join(cache, 'genjob', 'secret'), `${secret.toString('hex')}\n`, { mode: 0o600 });
    const seal = createHmac('sha256', secret)
      .update('genjob-run-manifest-v1\0big\0')
      .update(sha256(bytes))
      .digest('hex');
    writeFileSync(join(root, '.gen', 'runs', 'big.seal'), `${seal}\n`);
  }

  /** user + sys CPU seconds of one `genjob ARGS` in `root`. */
  function cpu(root, env, args) {
    const r = spawnSync('/usr/bin/time', ['-f', '%U %S', NODE, GENJOB, ...args], {
      cwd: root,
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const [u, s] = r.stderr.trim().split('\n').at(-1).split(' ').map(Number);
    return u + s;
  }

  return {
    'gate-run'() {
      const root = freshRepo('gate-run');
      const cache = `${root}-cache`;
      const env = { ...process.env, XDG_CACHE_HOME: cache };
      receivedRun(root, cache, JOBS);
      const first = genjob(['gate', '--run', 'big'], { cwd: root, env }).stdout;
      if (!first.startsWith(`gate big: met: ${JOBS}/${JOBS} = 100.0%`))
        throw new Error(`gate saw: ${first.slice(0, 120)}`);
      const load = os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ');
      const m = alternate({
        genjob: () => genjob(['gate', '--run', 'big'], { cwd: root, env }).ms,
        baseline: () => genjob(['status'], { cwd: root, env }).ms,
      });
      const cpuGate = cpu(root, env, ['gate', '--run', 'big']);
      const cpuStatus = cpu(root, env, ['status']);
      const cpuVerify = cpu(root, env, ['verify', '--all']);
      record(`gate over a run of ${JOBS.toLocaleString('en')} jobs`, {
        ...m,
        target: 2,
        note: `${JOBS} received jobs with receipts, every one verified; baseline = \`genjob status\` of the same store; CPU (user+sys) gate ${round(cpuGate)} s, status ${round(cpuStatus)} s (${round(cpuGate / cpuStatus)}×), verify --all ${round(cpuVerify)} s; load average ${load}`,
      });
      rmSync(root, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    },
  };
}
