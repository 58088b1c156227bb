// kill -9 a real `genjob work` or `genjob apply` at a chosen step of its life (test/helpers/crash-preload.mjs
// patches node:fs in the child; shipped code has no switch for this), then recover the way an operator
// would — `reap`, `work --drain`, `apply --all` — and check the invariants: every minted key applied
// exactly once, the generator run once per key, the repository byte for byte as expected, nothing torn.
// Every step is hit at its first and at its second matching call (a fixed plan, the same on every
// machine); GENJOB_CRASH_RUNS above that adds runs drawn from a seeded PRNG (GENJOB_CRASH_SEED replays them).

import { readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Result } from 'execa';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { peekEpoch } from '../../src/core/receipt-peek.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { currentEpoch } from '../../src/store/attempts.js';
import { readJournal } from '../../src/store/journal.js';
import { mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { mulberry32 } from '../helpers/prng.js';
import { spawnCli, workerRepo } from './worker-helpers.js';

const PRELOAD = join(import.meta.dirname, '../helpers/crash-preload.mjs');
/** Runs: by default each step at the first and at the second matching call (every pair once); more are drawn at random. */
const RUNS = Number(process.env.GENJOB_CRASH_RUNS ?? 0);
const PARALLEL = 3;
const SEED = Number(process.env.GENJOB_CRASH_SEED ?? Date.now() % 2 ** 31);

interface Step {
  name: string;
  /** Which process is killed. */
  victim: 'work' | 'apply';
  /** The fs call to die at (see crash-preload.mjs); absent for a kill from inside the generator. */
  crash?: { call: string; match: string; arg?: number; when: 'before' | 'after' };
}

const KEYED = '[0-9a-f]{64}';
const STEPS: Step[] = [
  {
    name: 'just after the claim',
    victim: 'work',
    crash: { call: 'renameSync', match: `/\\.gen/running/${KEYED}\\.json$`, arg: 1, when: 'after' },
  },
  {
    name: 'after the epoch, before the lease',
    victim: 'work',
    crash: { call: 'linkSync', match: '/\\.gen/attempts/', arg: 1, when: 'after' },
  },
  {
    name: 'after the lease was written',
    victim: 'work',
    crash: { call: 'renameSync', match: '/\\.gen/leases/', arg: 1, when: 'after' },
  },
  { name: 'during the generator', victim: 'work' },
  {
    name: 'after the result landed in out/, no receipt',
    victim: 'work',
    crash: { call: 'renameSync', match: `/\\.gen/out/${KEYED}$`, arg: 1, when: 'after' },
  },
  {
    name: 'while writing the receipt (temp written, not linked)',
    victim: 'work',
    crash: { call: 'linkSync', match: '/\\.gen/receipts/', arg: 1, when: 'before' },
  },
  {
    name: 'just after the receipt was linked',
    victim: 'work',
    crash: { call: 'linkSync', match: '/\\.gen/receipts/', arg: 1, when: 'after' },
  },
  {
    name: 'after running → received, lease not yet removed',
    victim: 'work',
    crash: { call: 'renameSync', match: '/\\.gen/received/', arg: 1, when: 'after' },
  },
  {
    name: 'apply: while storing objects',
    victim: 'apply',
    crash: { call: 'linkSync', match: '/\\.gen/objects/', arg: 1, when: 'after' },
  },
  {
    name: 'apply: just after the write-ahead record',
    victim: 'apply',
    crash: { call: 'linkSync', match: '/\\.gen/applying/', arg: 1, when: 'after' },
  },
  {
    name: 'apply: before replacing a file',
    victim: 'apply',
    crash: { call: 'renameSync', match: '/m/[ab]\\.txt$', arg: 1, when: 'before' },
  },
  {
    name: 'apply: after replacing a file',
    victim: 'apply',
    crash: { call: 'renameSync', match: '/m/[ab]\\.txt$', arg: 1, when: 'after' },
  },
  {
    name: 'apply: after creating a file',
    victim: 'apply',
    crash: { call: 'linkSync', match: '/m/new\\.txt$', arg: 1, when: 'after' },
  },
  {
    name: 'apply: just after the applied record',
    victim: 'apply',
    crash: { call: 'linkSync', match: '/\\.gen/applied/', arg: 1, when: 'after' },
  },
  {
    name: 'apply: after unlinking received/',
    victim: 'apply',
    crash: { call: 'unlinkSync', match: '/\\.gen/received/', arg: 0, when: 'after' },
  },
];

// Logs its key (O_APPEND), optionally kills the worker on the n-th generation (once), then rewrites
// every path named in the instruction. A killed worker leaves serve and this script running: the
// result is finished and cached, and the replay fetches it instead of generating again.
const GENERATOR = `printf '%s\\n' "$GENJOB_KEY" >> "$GEN_LOG"
if [ -n "$CRASH_GEN_NTH" ] && [ "$(wc -l < "$GEN_LOG")" -eq "$CRASH_GEN_NTH" ] && mkdir "$CRASH_GEN_MARK" 2>/dev/null; then
  kill -9 "$(cat "$WORKER_PID_FILE")"
fi
for p in $GENJOB_INSTRUCTION; do printf 'new %s %s\\n' "$p" "$GENJOB_KEY" > "$p"; done
`;

interface RunResult {
  step: string;
  nth: number;
  killed: boolean;
}

/** Proper-lockfile locks of a killed process go stale after 10 s: age them instead of waiting. */
function agePastStale(store: Store): void {
  const past = new Date(Date.now() - 60_000);
  for (const name of readdirSync(store.layout.dir('locks')))
    utimesSync(join(store.layout.dir('locks'), name), past, past);
}

async function oneRun(step: Step, nth: number): Promise<RunResult> {
  const original: Record<string, string> = { 's/one.txt': 'one\n', 'm/a.txt': 'a\n', 'm/b.txt': 'b\n' };
  const { base, root, store, generator: gen } = workerRepo('genjob-crash-', GENERATOR, original);
  // this generator kills the worker by its pid on purpose: it must run outside the sandbox to see it,
  // and, run as root, as root too (the sandbox user, nobody, may not signal root's worker)
  const asRoot = process.getuid?.() === 0 ? ['--sandbox-user', 'root'] : [];
  const generator = [...gen, '--no-sandbox', ...asRoot];
  const input = (p: string) => ({ path: p, sha256: p in original ? sha256Hex(original[p]!) : null });
  const jobs = [['s/one.txt'], ['m/a.txt', 'm/b.txt', 'm/new.txt']].map((paths) =>
    buildJob(paths.join(' '), paths.map(input)),
  );
  for (const job of jobs) expect(mintJob(store, job).minted).toBe(true);
  const expected = new Map<string, string>();
  for (const job of jobs) for (const i of job.inputs) expected.set(i.path, `new ${i.path} ${job.key}\n`);

  const pidFile = join(base, 'worker.pid');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_CACHE_HOME: join(base, 'cache'),
    GEN_LOG: join(base, 'gen.log'),
    WORKER_PID_FILE: pidFile,
    CRASH_GEN_MARK: join(base, 'gen-crashed'),
  };
  const genjob = (args: string[], extraEnv: NodeJS.ProcessEnv = {}, preload = false) => {
    const child = spawnCli(root, args, { ...env, ...extraEnv }, preload ? PRELOAD : undefined);
    if (child.pid !== undefined) writeFileSync(pidFile, String(child.pid));
    return child;
  };
  const crashEnv = step.crash
    ? { GENJOB_CRASH: JSON.stringify({ ...step.crash, nth }) }
    : { CRASH_GEN_NTH: String(nth) };
  const ok = (r: Result, what: string) => expect(r.exitCode, `${what}: ${r.stderr}`).toBe(0);

  let victim: Result;
  if (step.victim === 'work') {
    victim = await genjob(['work', '--drain', '--quiet', ...generator], crashEnv, step.crash !== undefined);
  } else {
    ok(await genjob(['work', '--drain', '--quiet', ...generator]), 'work');
    victim = await genjob(['apply', '--all'], crashEnv, true);
  }
  const killed = victim.signal === 'SIGKILL';

  // recovery, as an operator would run it: reap (the killed worker's lease is long dead), drain, apply
  agePastStale(store);
  ok(await genjob(['reap', '--lease-ttl', '0.001']), 'reap');
  ok(await genjob(['work', '--drain', '--quiet', ...generator]), 'replay work');
  ok(await genjob(['apply', '--all']), 'replay apply');
  const again = await genjob(['apply', '--all', '--json']);
  ok(again, 'second apply');

  // every minted key applied exactly once, nothing left anywhere else
  const keys = jobs.map((j) => `${j.key}.json`).sort();
  expect(readdirSync(store.layout.dir('applied')).sort()).toEqual(keys);
  for (const s of ['queue', 'running', 'received', 'applying'])
    expect(readdirSync(store.layout.dir(s))).toEqual([]);
  const applied = readJournal(store).filter((e) => e.event === 'applied');
  for (const job of jobs) expect(applied.filter((e) => e.key === job.key).length).toBeLessThanOrEqual(1);
  expect((JSON.parse(again.stdout) as { results: unknown[] }).results).toEqual([]); // nothing left to apply
  // one receipt per key, of the newest epoch
  expect(readdirSync(store.layout.dir('receipts')).sort()).toEqual(keys);
  for (const job of jobs) {
    const receipt = readFileSync(store.layout.receipt(job.key));
    expect(peekEpoch(receipt)).toBe(currentEpoch(store, job.key));
  }
  // the generator ran once per key: a crash never made it generate again
  const log = readFileSync(join(base, 'gen.log'), 'utf8').trimEnd().split('\n');
  expect(log.sort()).toEqual(jobs.map((j) => j.key).sort());
  // the repository: exactly the expected bytes, no torn temp files beside them
  for (const [p, bytes] of expected) expect(readFileSync(join(root, p), 'utf8')).toBe(bytes);
  expect(readdirSync(join(root, 'm')).sort()).toEqual(['a.txt', 'b.txt', 'new.txt']);
  expect(readdirSync(join(root, 's'))).toEqual(['one.txt']);
  // the killed process's half-published temp files were swept by the reap
  expect(readdirSync(store.layout.tmp)).toEqual([]);
  return { step: step.name, nth, killed };
}

describe('kill -9 at a random step, then reap and replay', () => {
  const runs = Math.max(RUNS, 2 * STEPS.length);
  it(`ends with every minted key applied exactly once and the repository byte-exact (${runs} runs)`, async () => {
    console.log(`crash matrix: GENJOB_CRASH_SEED=${SEED}, ${runs} runs over ${STEPS.length} steps`);
    const rand = mulberry32(SEED);
    // every step at its first matching call, then at its second (the 2nd job), then steps and calls at random
    const plan = Array.from({ length: runs }, (_, i) =>
      i < 2 * STEPS.length
        ? { step: STEPS[i % STEPS.length]!, nth: i < STEPS.length ? 1 : 2 }
        : { step: STEPS[Math.floor(rand() * STEPS.length)]!, nth: 1 + Math.floor(rand() * 2) },
    );
    const results: RunResult[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next < plan.length) {
          const { step, nth } = plan[next++]!;
          try {
            results.push(await oneRun(step, nth));
          } catch (err) {
            throw new Error(
              `crash run "${step.name}" nth=${nth} (GENJOB_CRASH_SEED=${SEED}) failed: ${(err as Error).message}`,
              {
                cause: err,
              },
            );
          }
        }
      }),
    );
    const killed = results.filter((r) => r.killed).length;
    const byStep = new Map<string, number>();
    for (const r of results) if (r.killed) byStep.set(r.step, (byStep.get(r.step) ?? 0) + 1);
    console.log(
      `crash matrix: ${results.length} runs, ${killed} killed at their step, ${byStep.size} distinct steps hit`,
    );
    expect(results).toHaveLength(runs);
    // a run whose step never came (e.g. nth = 2 of a call made once) still proves recovery, but most must crash
    expect(killed).toBeGreaterThanOrEqual(Math.floor(runs * 0.8));
    expect(byStep.size).toBe(STEPS.length);
  });
});
