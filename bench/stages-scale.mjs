// Bench stages for scale: a drain from a deep queue against one from a shallow queue, `status`
// on a deep .gen/ against `ls` of its queue, and a drain over a pool of 4 ssh hosts against 1 host.
// bench/run.mjs registers them; `tools` are its measuring helpers (run, genjob, alternate, record, …).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeJob, queueJob, smallFiles } from './fixtures.mjs';
import { startSshd } from './sshd.mjs';

export const SCALE_STAGES = ['drain-deep', 'status-deep', 'pool'];

export function scaleStages(tools) {
  const { QUICK, TMP, NODE, GENJOB, run, genjob, alternate, record, freshRepo, median, round, MIN_PAIRS } =
    tools;
  const SIZES = QUICK
    ? { deep: 10_000, shallow: 200, statusJobs: 20_000, poolJobs: 12 }
    : { deep: 100_000, shallow: 1000, statusJobs: 100_000, poolJobs: 40 };

  /** `count` queued jobs in `root`, all over one small input (fixtures, no mint processes). */
  function queueMany(root, count, tag) {
    const input = smallFiles(root, 1, 1000, `in-${tag}`)[0];
    const inputs = [{ path: input.path, sha256: input.sha256 }];
    for (let i = 0; i < count; i++) queueJob(root, makeJob(`${tag} job ${i}`, inputs));
  }

  const countIn = (root, dir) => readdirSync(join(root, '.gen', dir)).length;

  /**
   * Start `work --drain` and time it until `n` more receipts exist (polled every 10 ms), then stop it
   * with SIGTERM (a drain finishes the job in flight and exits). The same clock for both queues, so
   * a deep queue that is never drained to the end is compared fairly with a shallow one that is.
   */
  function drainFirst(root, n, extra = []) {
    const before = countIn(root, 'receipts');
    const env = { ...process.env, XDG_CACHE_HOME: join(root, 'cache') };
    return new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      const child = spawn(NODE, [GENJOB, 'work', '--drain', '--generator', 'true', '--quiet', ...extra], {
        cwd: root,
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr = (stderr + d).slice(-4000);
      });
      let ms;
      const timer = setInterval(() => {
        if (ms !== undefined || countIn(root, 'receipts') - before < n) return;
        ms = Number(process.hrtime.bigint() - t0) / 1e6;
        clearInterval(timer);
        child.kill('SIGTERM');
      }, 10);
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        clearInterval(timer);
        if (ms === undefined && countIn(root, 'receipts') - before >= n)
          ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (ms === undefined)
          reject(new Error(`work --drain exited ${code ?? signal} before ${n} receipts: ${stderr}`));
        else resolve(ms);
      });
    });
  }

  /**
   * Each back-to-back pair's throughput ratio genjob/baseline (baseline time over genjob time): on a
   * shared machine the load drifts over a run of minutes, and a pair sees the same load.
   */
  const throughputRatios = (m) => m.genjobRuns.map((g, i) => m.baselineRuns[i] / g);

  /** alternate() for async sides: the same order, the same minimum of pairs, awaited one at a time. */
  async function alternateAsync({ runs, prepare, genjob: g, baseline: b }) {
    const gs = [];
    const bs = [];
    for (let i = 0; i < Math.max(MIN_PAIRS, runs); i++) {
      const ctx = prepare?.(i);
      if (i % 2 === 0) {
        gs.push(await g(ctx, i));
        bs.push(await b(ctx, i));
      } else {
        bs.push(await b(ctx, i));
        gs.push(await g(ctx, i));
      }
    }
    return { genjob: median(gs), baseline: median(bs), genjobRuns: gs, baselineRuns: bs };
  }

  return {
    // claiming must not cost more per job when the queue is 100× deeper (one listing per batch)
    async 'drain-deep'() {
      const n = SIZES.shallow;
      const deep = freshRepo('drain-deep');
      queueMany(deep, SIZES.deep, 'deep');
      let topUp = 0;
      const m = await alternateAsync({
        runs: MIN_PAIRS,
        prepare: (i) => {
          // the deep queue is kept at its depth: put back as many fresh jobs as the last run took
          const missing = SIZES.deep - countIn(deep, 'queue');
          if (missing > 0) queueMany(deep, missing, `top-up ${topUp++}`);
          const shallow = freshRepo(`drain-shallow-${i}`);
          queueMany(shallow, n, `shallow ${i}`);
          return shallow;
        },
        genjob: () => drainFirst(deep, n),
        baseline: async (shallow) => {
          const ms = await drainFirst(shallow, n);
          rmSync(shallow, { recursive: true, force: true });
          return ms;
        },
      });
      rmSync(deep, { recursive: true, force: true });
      const deepRate = (n * 1000) / m.genjob;
      const shallowRate = (n * 1000) / m.baseline;
      const ratios = throughputRatios(m);
      const ratio = median(ratios);
      process.stderr.write(
        `bench: drain-deep runs (ms): deep ${m.genjobRuns.map(Math.round)} shallow ${m.baselineRuns.map(Math.round)}\n`,
      );
      record(`work --drain, ${SIZES.deep.toLocaleString('en')} queued`, {
        genjob: deepRate,
        baseline: shallowRate,
        unit: 'jobs/s',
        ratios,
        target: '≥ 0.8',
        met: ratio >= 0.8,
        note: `first ${n} jobs, generator \`true\`; baseline = the same drain with ${n} queued; ratio = deep/shallow throughput, median of back-to-back pairs`,
      });
    },

    // status counts by listing and parses only the rows it shows: near the cost of `ls` of the queue
    'status-deep'() {
      const root = freshRepo('status-deep');
      queueMany(root, SIZES.statusJobs, 'status');
      const queueDir = join(root, '.gen', 'queue');
      const out = genjob(['status'], { cwd: root }).stdout;
      if (!out.startsWith(`queue ${SIZES.statusJobs} `)) throw new Error(`status saw: ${out.slice(0, 80)}`);
      const m = alternate({
        genjob: () => genjob(['status'], { cwd: root }).ms,
        baseline: () => run('ls', [queueDir]).ms,
      });
      record(`status, ${SIZES.statusJobs.toLocaleString('en')} jobs`, {
        ...m,
        target: 3,
        note: `${SIZES.statusJobs} queued; baseline = \`ls\` of .gen/queue`,
      });
      rmSync(root, { recursive: true, force: true });
    },

    // one slot on each of 4 hosts against one slot on 1 host, jobs that take 1 s each
    async pool() {
      const hosts = [];
      try {
        for (let h = 0; h < 4; h++)
          hosts.push(await startSshd({ alias: `genjob-pool-${h}`, maxSessions: 16, batchMode: true }));
        // one client config naming all four aliases, so one --ssh-config serves the whole pool
        const config = join(TMP, 'pool-ssh-config');
        writeFileSync(config, hosts.map((s) => readFileSync(s.sshConfigFile, 'utf8')).join('\n'));
        const n = SIZES.poolJobs;
        const drain = (count, i, tag) => {
          const root = freshRepo(`pool-${tag}-${i}`);
          queueMany(root, n, `pool ${tag} ${i}`);
          const args = ['work', '--drain', '--generator', 'sleep 1', '--quiet', '--ssh-config', config];
          for (const s of hosts.slice(0, count)) args.push('--host', `1/${s.alias}`);
          args.push(
            '--remote-cmd',
            `${NODE} ${GENJOB} serve --session --cache-dir ${join(TMP, `pcache-${tag}-${i}`)}`,
          );
          const ms = genjob(args, { cwd: root }).ms;
          const got = countIn(root, 'receipts');
          if (got !== n) throw new Error(`pool: ${got} receipts for ${n} jobs`);
          rmSync(root, { recursive: true, force: true });
          return ms;
        };
        const m = alternate({
          warmup: false,
          genjob: (_, i) => drain(4, i, 'four'),
          baseline: (_, i) => drain(1, i, 'one'),
        });
        const fourRate = (n * 1000) / m.genjob;
        const oneRate = (n * 1000) / m.baseline;
        const ratios = throughputRatios(m);
        const ratio = median(ratios);
        record('work --drain over a pool of 4 ssh hosts', {
          genjob: fourRate,
          baseline: oneRate,
          unit: 'jobs/s',
          ratios,
          target: '≥ 3.5',
          met: ratio >= 3.5,
          note: `${n} jobs, generator \`sleep 1\`, 1 slot per host; baseline = the same drain on 1 host; ratio = speed-up (${round(m.genjob)} vs ${round(m.baseline)} ms)`,
        });
      } finally {
        await Promise.all(hosts.map((s) => s.stop()));
      }
    },
  };
}
