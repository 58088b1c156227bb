// Syscall fault injection over mint, work, apply, apply --all, revert and the other commands that touch
// .gen/ or the tree: verify, status, show, drop, cancel, retry, reap, gc, a run's gate and init (strace
// inject=, see fault-sweep.ts). For every point where the fault lands on a call genjob makes on the
// repository (.gen/ or the tree), with ENOSPC, EIO, EDQUOT or EACCES: the command exits 5 with one stderr
// line naming EGJ_IO, the operation, the path and the errno (no "internal error", no stack) — or, where a
// failure is harmless by design (a best-effort cleanup), it succeeds, printing no EGJ_ line; then a clean
// re-run finishes the job exactly once, without waiting for a lease TTL, leaving no temp or staging file,
// and the generator has run at most once for the key.
//
// Excluded from the strict checks, with the reason: faults that land outside the repository. Those hit
// Node's own runtime (loading its modules, its eventfd and signal pipe), the shell
// that starts the generator, or the generator host's result cache (the host's side, where a result that
// cannot be cached may be generated again; that is the host cache's own contract). For them only the
// end state is checked. No point may hang the sweep: each run is killed (kill -9 by pid) at a deadline
// (GENJOB_IOFAULT_DEADLINE_MS, 300 s: a guard far above a run's few seconds under load, never a pass
// condition); a hang on a runtime fault is counted as excluded, with its reason
// (libuv's eventfd and signal pipe: a failed write there can leave the loop waiting for ever), and a hang
// on genjob's own call is a failure. Points are sampled without repeats with a printed seed
// (GENJOB_IOFAULT_SEED replays a sample, GENJOB_IOFAULT_POINT=close#38:EIO one point);
// GENJOB_IOFAULT_ALL=1 sweeps every point (figures in docs/reliability.md).

import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/store/journal.js';
import { ownerGone } from '../../src/store/process-identity.js';
import { Store } from '../../src/store/store.js';
import { shellQuote } from '../../src/transport/ssh-options.js';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import { mulberry32 } from '../helpers/prng.js';
import { processesNaming } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-store.js';
import {
  classify,
  cloneSandbox,
  DEADLINE_MS,
  errnosFor,
  type Landing,
  leftovers,
  probePoints,
  traced,
  tracedHost,
} from './fault-sweep.js';
import {
  CLI,
  type CliResult,
  DEMO_GENERATOR,
  FIXTURE,
  runCli,
  snapshot,
  TIMEOUT_INSTRUCTION,
} from './helpers.js';

const PATHS = ['src/user.py', 'tests/test_user.py'];
const ALL = process.env.GENJOB_IOFAULT_ALL === '1';
/** Keep going past failures and count them (the full sweep, or a large sample for the figures). */
const KEEP_GOING = ALL || process.env.GENJOB_IOFAULT_REPORT !== undefined;
// a fixed default keeps CI's sample the same run to run; GENJOB_IOFAULT_SEED=random draws a new one
const SEED_ENV = process.env.GENJOB_IOFAULT_SEED;
const SEED = SEED_ENV === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(SEED_ENV ?? 20261201);
/** Replay one point, e.g. GENJOB_IOFAULT_POINT=close#38:EIO (with -t for its command). */
const ONLY = process.env.GENJOB_IOFAULT_POINT;
/** Sweep only these syscalls, e.g. GENJOB_IOFAULT_SYSCALLS=read,statx,getdents64 (default: all). */
const ONLY_SYSCALLS = process.env.GENJOB_IOFAULT_SYSCALLS?.split(',');
/** Keep the strace log of each point that fails in this directory (a thread-pool point may not replay). */
const KEEP_LOGS = process.env.GENJOB_IOFAULT_KEEP_LOGS;
/** Points per command in the default run (the whole sweep takes far longer than CI should). */
const SAMPLE = Number(process.env.GENJOB_IOFAULT_SAMPLE ?? 4);

const haveStrace =
  (await execa('strace', ['-V'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;

interface Box {
  base: string;
  repo: string;
  cache: string;
  count: string;
  gen: string;
  env: Record<string, string>;
  cli: (args: readonly string[]) => Promise<{ exitCode: number | undefined; stdout: string; stderr: string }>;
}

function box(base: string, extraEnv: Record<string, string> = {}): Box {
  const repo = join(base, 'repo');
  const cache = join(base, 'cache');
  const count = join(base, 'generator-runs');
  const gen = join(base, 'bin', 'gen.sh');
  const env = { XDG_CACHE_HOME: cache, ...extraEnv };
  return { base, repo, cache, count, gen, env, cli: (args) => runCli(args, { cwd: repo, env }) };
}

async function freshBox(extraEnv?: Record<string, string>): Promise<Box> {
  const b = box(tempDir('genjob-iofault-'), extraEnv);
  mkdirSync(b.cache);
  mkdirSync(join(b.base, 'bin'));
  await execa('cp', ['-a', FIXTURE, b.repo]);
  await execa('git', ['init', '-q'], { cwd: b.repo });
  // the generator counts its runs outside the repository, then runs the demo generator
  writeFileSync(b.gen, `#!/bin/sh\necho run >> ${JSON.stringify(b.count)}\nexec ${DEMO_GENERATOR}\n`, {
    mode: 0o755,
  });
  return b;
}

function runs(b: Box): number {
  try {
    return readFileSync(b.count, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
}

/** The cache of the generator host that `work on a failing host` launches. */
const hostCache = (b: Box) => join(b.cache, 'host');

/** Run `s`'s command with `fault` injected where the scenario puts it (n = 0: a probe, no fault). */
function runScenario(
  s: Scenario,
  b: Box,
  key: string,
  log: string,
  fault?: { syscall: string; errno: string; n: number },
) {
  // where: a run hung on a fault that landed only on the runtime is killed once its trace stops growing
  const opts = { cwd: b.repo, env: b.env, log, where: { repo: b.repo, cache: b.cache } };
  return s.side === 'host'
    ? tracedHost(s.args(b, key), { ...opts, cacheDir: hostCache(b) }, fault)
    : traced(s.args(b, key), opts, fault);
}

const ls = (b: Box, dir: string) => {
  try {
    return readdirSync(join(b.repo, '.gen', dir)).sort();
  } catch {
    return [];
  }
};

async function ok(b: Box, args: readonly string[]): Promise<string> {
  const r = await b.cli(args);
  if (r.exitCode !== 0) throw new Error(`genjob ${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
  return r.stdout;
}

/**
 * Boxes whose generation was run a second time on purpose: in doubt and consented (--retry-aborted),
 * or abandoned (the fault killed the serve that ran it, so the host generated it again and said so).
 */
const consented = new Set<string>();
const ABANDONED = /was abandoned \(nothing of it can reach the cache\); generating again/;

interface Scenario {
  name: string;
  /** Where the faults are injected: the CLI (default), or the generator host it launches. */
  side?: 'repo' | 'host';
  /** Started once before the scenario's probe (a provider's API on loopback). */
  setUp?: () => Promise<void>;
  /** Variables every run of the scenario gets. */
  env?: () => Record<string, string>;
  /**
   * The command runs git on the repository, so a fault lands in git too (strace's when= counts per
   * process): there, git's own failure is said as EGJ_GIT (exit 5 when git names the disk, 2 otherwise),
   * or as what git answered (a HEAD it could not read is "bad revision": EGJ_CHECK_NO_HEAD, exit 2); the
   * re-run finishes all the same.
   */
  gitChildren?: boolean;
  /** Checked right after a faulted run instead of "nothing in running/" (a submitted batch is there by design). */
  leftRunning?: (b: Box, key: string, context: string) => void;
  /** Bring a fresh box to the state the command starts from; returns the key. */
  prepare: (b: Box) => Promise<string>;
  args: (b: Box, key: string) => string[];
  /** The clean re-run(s) that finish the job after a fault. */
  finish: (b: Box, key: string) => Promise<void>;
  /** The job is done exactly once. */
  done: (b: Box, key: string, expected: Expected) => void;
}

interface Expected {
  original: ReturnType<typeof snapshot>;
  applied: ReturnType<typeof snapshot>;
}

const mint = (b: Box) =>
  ok(b, ['mint', '--json', '-m', TIMEOUT_INSTRUCTION, ...PATHS]).then((o) => JSON.parse(o).key);
const work = (b: Box) =>
  ok(b, ['work', '--once', '--no-sandbox', '--lease-ttl', '3600', '--generator', b.gen]);

function receivedOnce(b: Box, key: string): void {
  expect(ls(b, 'queue')).toEqual([]);
  expect(ls(b, 'running')).toEqual([]);
  expect([...ls(b, 'received'), ...ls(b, 'applied')]).toEqual([`${key}.json`]);
  expect(ls(b, 'receipts')).toEqual([`${key}.json`]);
  const received = readJournal(new Store(b.repo)).filter((e) => e.event === 'received');
  expect(received.length).toBeLessThanOrEqual(1);
}

/**
 * The host would not generate the job again on its own (a generation of it is in doubt: its record
 * could not be judged, say one the fault left unreadable), so the worker set it aside in dead/ at once;
 * `genjob retry` is the consent that brings it back, and the next run generates it once more.
 */
async function consentInDoubt(b: Box, key: string, r: CliResult, work: readonly string[]): Promise<void> {
  if (!/EGJ_GENERATION_IN_DOUBT/.test(r.stderr))
    throw new Error(`genjob work exited ${r.exitCode}: ${r.stderr}`);
  consented.add(b.base);
  await ok(b, ['retry', key]);
  await ok(b, work);
}

/** `then` run on a freshly minted job of the box; returns the key. */
const minted = (then: (b: Box) => Promise<unknown>) => async (b: Box) => {
  const key = await mint(b);
  await then(b);
  return key;
};

/** Run the CLI: exit 0, or the refusal `already` (what a faulted run that got to the end leaves). */
async function okOr(b: Box, args: readonly string[], already: RegExp): Promise<void> {
  const r = await b.cli(args);
  if (r.exitCode !== 0 && !already.test(r.stderr))
    throw new Error(`genjob ${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
}

/** The job is in dead/ once (one job file, with its reason), nowhere else. */
function deadOnce(b: Box, key: string): void {
  expect(ls(b, 'queue')).toEqual([]);
  expect(ls(b, 'running')).toEqual([]);
  const jobs = ls(b, 'dead').filter((n) => n.startsWith(`${key}.job.`));
  expect(jobs.filter((n) => !n.endsWith('.why.json'))).toHaveLength(1);
  expect(jobs.filter((n) => n.endsWith('.why.json'))).toHaveLength(1);
}

/** Claim `key` with a worker whose generator never ends, then kill -9 the worker, its serve and generator. */
async function claimedByDeadWorker(b: Box, key: string): Promise<void> {
  const hang = join(b.base, 'bin', 'hang.sh');
  // hangs until killed, and ends by itself once this test process is gone: a suite killed from outside
  // leaves no generator behind
  writeFileSync(hang, `#!/bin/sh\nwhile kill -0 ${process.pid} 2>/dev/null; do sleep 1; done\n`, {
    mode: 0o755,
  });
  const worker = execa(
    process.execPath,
    [CLI, 'work', '--once', '--no-sandbox', '--lease-ttl', '3600', '--generator', hang],
    { cwd: b.repo, env: { ...b.env, GENJOB_DEBUG: '' }, detached: true, reject: false },
  );
  // waits for the lease however slow the machine (the test's guard ends a wait for ever)
  while (!ls(b, 'leases').includes(`${key}.json`)) await new Promise((done) => setTimeout(done, 50));
  expect(ls(b, 'running')).toEqual([`${key}.json`]);
  process.kill(-worker.pid!, 'SIGKILL');
  await worker;
  // its serve has a process group of its own (a host's serve outlives its worker, to keep the result):
  // killed with the generator, each by the box it names, or it would finish after the test and write
  // its cache into the box's removed directory
  for (const pid of processesNaming(b.base)) process.kill(pid, 'SIGKILL');
}

/** The provider the `work --batch` scenario submits to (started once, shared by its points). */
let batchApi: FakeOpenAi | undefined;
afterAll(async () => batchApi?.close());

/** Any job's answer: the two allowed files with a line added. */
const batchAnswer = () => ({
  body: chatCompletion(
    structuredAnswer(PATHS.map((path) => ({ path, content: `# touched by the batch\n` }))),
    { usage: { prompt_tokens: 10, completion_tokens: 5 } },
  ),
});

/** Batches that carried `key` by the box's submissions: at most one (never paid twice). */
const submittedBefore = new Map<string, number>();
function submittedOnce(b: Box, key: string): void {
  const now = batchApi!.batch!.submitted.get(key) ?? 0;
  expect(now - (submittedBefore.get(b.base) ?? 0)).toBeLessThanOrEqual(1);
}

const SCENARIOS: Scenario[] = [
  {
    name: 'mint',
    prepare: async () => '',
    args: () => ['mint', '-m', TIMEOUT_INSTRUCTION, ...PATHS],
    finish: async (b) => {
      await mint(b);
    },
    done: (b) => {
      expect(ls(b, 'queue')).toHaveLength(1);
      expect(ls(b, 'running')).toEqual([]);
    },
  },
  {
    name: 'work',
    prepare: mint,
    args: (b) => ['work', '--once', '--no-sandbox', '--lease-ttl', '3600', '--generator', b.gen],
    finish: async (b, key) => {
      const work = ['work', '--once', '--no-sandbox', '--lease-ttl', '3600', '--generator', b.gen];
      const r = await b.cli(work);
      // the fault ended the worker (and its local serve) mid-generation: the serve is gone, so the
      // host generates it again (abandoned) and says so
      if (ABANDONED.test(r.stderr)) consented.add(b.base);
      if (r.exitCode === 0 && !/EGJ_GENERATION_IN_DOUBT/.test(r.stderr)) return;
      await consentInDoubt(b, key, r, work);
    },
    done: receivedOnce,
  },
  {
    // the host's disk fails: `work --launch` starts `genjob serve` under strace, faults land on the
    // host's result cache and workspaces, and the worker must bring the job back, never pay twice
    name: 'work on a failing host',
    side: 'host',
    prepare: mint,
    args: (b) => ['work', '--once', '--no-sandbox', '--lease-ttl', '3600', '--generator', b.gen],
    finish: async (b, key) => {
      const launch = `${shellQuote(process.execPath)} ${shellQuote(CLI)} serve --session --cache-dir ${shellQuote(hostCache(b))}`;
      const base = [
        'work',
        '--once',
        '--no-sandbox',
        '--lease-ttl',
        '3600',
        '--generator',
        b.gen,
        '--launch',
        launch,
      ];
      const r = await b.cli(base);
      if (ABANDONED.test(r.stderr)) consented.add(b.base);
      if (r.exitCode === 0 && !/EGJ_GENERATION_IN_DOUBT/.test(r.stderr)) return;
      await consentInDoubt(b, key, r, base);
    },
    done: receivedOnce,
  },
  {
    // work --batch against a provider's batch API (a fake on loopback): a fault while preparing or
    // submitting leaves the job in queue/, or running/ under a lease naming a batch the provider has
    // (collected by --batch-poll, no TTL); a line is never submitted twice
    name: 'work --batch',
    setUp: async () => {
      batchApi ??= await startFakeOpenAi([], { batch: { answer: batchAnswer, pollsToFinish: 0 } });
    },
    env: () => ({ GENJOB_OPENAI_BASE_URL: batchApi!.url, GENJOB_OPENAI_MODEL: 'm' }),
    prepare: mint,
    args: () => ['work', '--batch', '--generator', 'builtin:openai'],
    leftRunning: (b, key, context) => {
      const running = ls(b, 'running');
      if (running.length === 0) return;
      expect(running, context).toEqual([`${key}.json`]);
      const lease = JSON.parse(readFileSync(join(b.repo, '.gen', 'leases', `${key}.json`), 'utf8'));
      if (lease.batch !== undefined) {
        expect(
          batchApi!.batch!.batches.map((x) => x.id),
          context,
        ).toContain(lease.batch);
        return;
      }
      // not yet sent: the run's intent is recorded, and the next --batch or --batch-poll sends it
      const run = /^batch (\S+)$/.exec(String(lease.destination))?.[1];
      expect(existsSync(join(b.repo, '.gen', 'batches', String(run), 'record.json')), context).toBe(true);
    },
    finish: async (b, key) => {
      // as a user would: submit what is queued, poll; a run lock its dead worker had not yet recorded is
      // stale after 2 s, and a dead batch worker's job goes back to the queue on the next run
      for (let round = 0; round < 4; round++) {
        if (ls(b, 'queue').includes(`${key}.json`))
          await ok(b, ['work', '--batch', '--generator', 'builtin:openai']);
        await ok(b, ['work', '--batch-poll']);
        if (ls(b, 'received').includes(`${key}.json`)) break;
        await new Promise((done) => setTimeout(done, 2_500));
      }
    },
    done: (b, key) => {
      const where = () =>
        `queue ${ls(b, 'queue')} running ${ls(b, 'running')} received ${ls(b, 'received')} batches ${ls(b, 'batches')} leases ${ls(b, 'leases').map((l) => readFileSync(join(b.repo, '.gen', 'leases', l), 'utf8'))}`;
      try {
        receivedOnce(b, key);
        submittedOnce(b, key);
      } catch (err) {
        throw new Error(`${(err as Error).message}; ${where()}`);
      }
    },
  },
  {
    name: 'apply',
    prepare: async (b) => {
      const key = await mint(b);
      await work(b);
      return key;
    },
    args: (_b, key) => ['apply', key],
    finish: async (b, key) => {
      await ok(b, ['apply', key]);
    },
    done: (b, key, e) => {
      receivedOnce(b, key);
      expect(ls(b, 'applied')).toEqual([`${key}.json`]);
      expect(snapshot(b.repo)).toEqual(e.applied);
    },
  },
  {
    name: 'apply --all',
    prepare: async (b) => {
      const key = await mint(b);
      await work(b);
      return key;
    },
    args: () => ['apply', '--all'],
    finish: async (b) => {
      await ok(b, ['apply', '--all']);
    },
    done: (b, key, e) => {
      expect(ls(b, 'applied')).toEqual([`${key}.json`]);
      expect(snapshot(b.repo)).toEqual(e.applied);
    },
  },
  {
    name: 'revert',
    prepare: async (b) => {
      const key = await mint(b);
      await work(b);
      await ok(b, ['apply', key]);
      return key;
    },
    args: (_b, key) => ['revert', key],
    finish: async (b, key) => {
      const r = await b.cli(['revert', key]);
      // a revert that finished before the fault (e.g. in its last journal line) has nothing left to do
      if (r.exitCode !== 0 && !/nothing to revert|not applied/i.test(r.stderr))
        throw new Error(`revert exited ${r.exitCode}: ${r.stderr}`);
    },
    done: (b, _key, e) => {
      expect(snapshot(b.repo)).toEqual(e.original);
    },
  },
  // the other commands that read or write .gen/ or the tree
  {
    // the merge gate: a disk that fails is EGJ_IO (exit 5), never a receipt judged bad (exit 3)
    name: 'verify',
    prepare: minted(work),
    args: (_b, key) => ['verify', key],
    finish: async (b, key) => {
      await ok(b, ['verify', key]);
    },
    done: (b, key, e) => {
      receivedOnce(b, key);
      expect(snapshot(b.repo)).toEqual(e.original);
    },
  },
  {
    name: 'status',
    prepare: minted(work),
    args: () => ['status'],
    finish: async (b) => {
      await ok(b, ['status']);
    },
    done: receivedOnce,
  },
  {
    name: 'show',
    prepare: minted(work),
    args: (_b, key) => ['show', key],
    finish: async (b, key) => {
      await ok(b, ['show', key]);
    },
    done: receivedOnce,
  },
  {
    name: 'drop',
    prepare: mint,
    args: (_b, key) => ['drop', key],
    finish: async (b, key) => {
      await okOr(b, ['drop', key], /EGJ_UNKNOWN_KEY/); // the faulted drop may have finished
    },
    done: (b, key) => deadOnce(b, key),
  },
  {
    name: 'cancel',
    prepare: mint,
    args: (_b, key) => ['cancel', key],
    finish: async (b, key) => {
      await okOr(b, ['cancel', key], /EGJ_UNKNOWN_KEY/);
    },
    done: (b, key) => deadOnce(b, key),
  },
  {
    name: 'retry',
    prepare: async (b) => {
      const key = await mint(b);
      await ok(b, ['cancel', key]);
      return key;
    },
    args: (_b, key) => ['retry', key],
    finish: async (b, key) => {
      await okOr(b, ['retry', key], /EGJ_NOT_RETRYABLE: .*\(this one is queue\)/);
    },
    done: (b, key) => {
      expect(ls(b, 'queue')).toEqual([`${key}.json`]);
      expect(ls(b, 'running')).toEqual([]);
    },
  },
  {
    // a worker killed with its job claimed: reap takes the job back at once (its holder is gone)
    name: 'reap',
    prepare: async (b) => {
      const key = await mint(b);
      await claimedByDeadWorker(b, key);
      return key;
    },
    args: () => ['reap'],
    // the job starts in running/ under a dead worker's lease: a faulted reap may leave it there, and the
    // re-run (a plain reap, no TTL waited out) must take it back
    leftRunning: (b, key, context) => {
      if (ls(b, 'running').length > 0) expect(ls(b, 'running'), context).toEqual([`${key}.json`]);
    },
    finish: async (b) => {
      await ok(b, ['reap']);
    },
    done: (b, key) => {
      expect(ls(b, 'queue')).toEqual([`${key}.json`]);
      expect(ls(b, 'running')).toEqual([]);
      // a lease whose own unlink failed stays beside the queued job: harmless, it names the dead worker
      // and the next claim replaces it; any other lease is a failure
      for (const name of ls(b, 'leases')) {
        expect(name).toBe(`${key}.json`);
        const lease = JSON.parse(readFileSync(join(b.repo, '.gen', 'leases', name), 'utf8'));
        expect(ownerGone(lease.worker)).toBe(true);
      }
    },
  },
  {
    name: 'gc',
    prepare: async (b) => {
      const key = await mint(b);
      await work(b);
      await ok(b, ['apply', key]);
      return key;
    },
    args: () => ['gc', '--older-than', '0s'],
    finish: async (b) => {
      await ok(b, ['gc', '--older-than', '0s']);
    },
    done: (b, key, e) => {
      expect(ls(b, 'applied')).toEqual([]);
      expect(ls(b, 'out')).toEqual([]);
      expect(ls(b, 'receipts')).toEqual([]);
      expect(ls(b, 'tombstones')).toEqual([`${key}.json`]);
      expect(snapshot(b.repo)).toEqual(e.applied);
    },
  },
  {
    // a check: its private index and copy of the tree are git's to build, so a fault also lands in the git
    // commands it starts (gitChildren); the record is written once, by its digest, and the scratch removed
    name: 'check',
    gitChildren: true,
    prepare: async (b) => {
      writeFileSync(join(b.repo, 'genjob.config.json'), JSON.stringify({ checkers: { t: { run: 'true' } } }));
      await execa('git', ['add', '-A'], { cwd: b.repo });
      await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base'], {
        cwd: b.repo,
      });
      return minted(work)(b);
    },
    args: (_b, key) => ['check', key, '--no-sandbox'],
    finish: async (b, key) => {
      await ok(b, ['check', key, '--no-sandbox']);
    },
    done: (b, key, e) => {
      receivedOnce(b, key);
      expect(ls(b, `checks/${key}/t`).filter((n) => n.endsWith('.json'))).toHaveLength(1);
      expect(ls(b, 'staging').filter((n) => n.startsWith('.check-'))).toEqual([]);
      expect(snapshot(b.repo, ['.gen', '.git', 'genjob.config.json'])).toEqual(e.original);
    },
  },
  {
    // a run's gate: its record is published once, by exclusive create, and sealed as the user's decision;
    // a faulted gate leaves no record a re-run would not take as its own (the same decision reused and
    // sealed, never a second record), and apply --gated accepts what the re-run sealed
    name: 'gate',
    prepare: async (b) => {
      const key = JSON.parse(
        await ok(b, ['mint', '--json', '-m', TIMEOUT_INSTRUCTION, '--run', 'r', ...PATHS]),
      ).key;
      await work(b);
      return key;
    },
    args: () => ['gate', '--run', 'r', '--min-pass', '1'],
    finish: async (b) => {
      await ok(b, ['gate', '--run', 'r', '--min-pass', '1']);
      await ok(b, ['apply', '--run', 'r', '--gated', '--dry-run']);
    },
    done: (b, key, e) => {
      receivedOnce(b, key);
      expect(ls(b, 'runs/r.gates')).toEqual(['1.json', '1.seal']);
      expect(snapshot(b.repo)).toEqual(e.original);
    },
  },
  {
    name: 'init',
    prepare: async () => '',
    args: () => ['init'],
    finish: async (b) => {
      await ok(b, ['init']);
    },
    done: (b) => {
      const ignore = readFileSync(join(b.repo, '.gitignore'), 'utf8').split('\n');
      expect(ignore.filter((l) => l === '.gen/')).toHaveLength(1);
      expect(existsSync(join(b.repo, '.gen', 'queue'))).toBe(true);
    },
  },
];
/** `n` distinct items of `all` (a partial Fisher-Yates shuffle driven by `pick`), in the order drawn. */
function sample<T>(all: readonly T[], n: number, pick: () => number): T[] {
  const pool = [...all];
  const count = Math.min(n, pool.length);
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(pick() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, count);
}

interface PointResult {
  scenario: string;
  syscall: string;
  n: number;
  errno: string;
  landing: Landing;
  exit: number | undefined;
  /** What the injected call named. */
  paths: string[];
  /** Why the point was left out of every check (it is counted, not judged). */
  excluded?: string;
}

/** The kept log of the point running now (GENJOB_IOFAULT_KEEP_LOGS). */
let lastLog: string | undefined;

/** Check one point; returns what happened, throws (fails the test) on a broken rule. */
async function runPoint(
  s: Scenario,
  template: Box,
  key: string,
  expected: Expected,
  point: { syscall: string; n: number },
  errno: string,
  i: number,
): Promise<PointResult> {
  const b = box(tempDir('genjob-iofault-pt-'), s.env?.());
  cloneSandbox(template.base, b.base);
  // the generator script names the template's count file: point it at this box's
  writeFileSync(b.gen, readFileSync(b.gen, 'utf8').replaceAll(template.count, b.count));
  const before = runs(b);
  submittedBefore.set(b.base, batchApi?.batch?.submitted.get(key) ?? 0);
  const label = `${s.name} ${point.syscall}#${point.n} ${errno} (point ${i})`;
  const r = await runScenario(s, b, key, join(b.base, 'strace.log'), {
    syscall: point.syscall,
    errno,
    n: point.n,
  });
  if (KEEP_LOGS) {
    mkdirSync(KEEP_LOGS, { recursive: true });
    lastLog = join(KEEP_LOGS, `${label.replace(/[^\w#.-]+/g, '_')}.log`);
    copyFileSync(join(b.base, 'strace.log'), lastLog);
  }
  const where = { repo: b.repo, cache: b.cache };
  // where the fault landed: on the side swept when any thread's call there was failed, else the first
  const side = s.side ?? 'repo';
  const landed = r.calls.find((c) => c.injected && classify(c, where) === side) ?? r.landed;
  const landing = classify(landed, where);
  // strace's when= counts per process: the same invocation number fails in work's local serve (and its
  // generator) too. A fault there is the host's failure as the worker sees it: the job goes back to the
  // queue (exit 3), or the worker waits on a serve hung in its own runtime.
  const main = r.calls[0]?.pid;
  const inChild = r.calls.find((c) => c.injected && c.pid !== main && classify(c, where) !== side);
  const childFault = inChild && `${classify(inChild, where)} ${JSON.stringify(inChild.fds)} in a child`;
  const context = `${label}: landed ${landing} ${JSON.stringify(landed?.paths)}${childFault ? ` and ${childFault}` : ''}; exit ${r.exitCode}; stderr:\n${r.stderr}`;
  if (r.hung) {
    // killed at the deadline: a hang on Node's runtime (its signal pipe or eventfd, in the command or
    // its serve child) is excluded, with the reason; a hang on genjob's own call is a failure
    const runtime = landing === 'elsewhere' ? JSON.stringify(landed?.fds) : childFault;
    if (runtime === undefined) throw new Error(`${context}\nhung: killed after ${DEADLINE_MS} ms`);
    return {
      scenario: s.name,
      ...point,
      errno,
      landing,
      exit: r.exitCode,
      paths: landed?.fds ?? [],
      excluded: `hung on a runtime fault ${runtime}, killed after ${Math.round(r.hungAfterMs / 1000)} s`,
    };
  }
  if (landing === 'repo') {
    expect(r.stderr, context).not.toMatch(/internal error|\n\s+at /);
    // a failure said is never a success: a run that exits 0 printed no EGJ_ line
    if (r.exitCode === 0) expect(r.stderr, context).not.toMatch(/^genjob: EGJ_/m);
    // a fault that landed in serve is the host's failure as the worker sees it, not the worker's EGJ_IO
    // (serve's own lines are relayed above the worker's, prefixed [local])
    const inLocalServe =
      /back in the queue: .*host said: genjob: EGJ_IO: /.test(r.stderr) ||
      (childFault !== undefined && r.exitCode === 3 && /back in the queue: /.test(r.stderr)) ||
      // the fault also landed in the local serve as it started: the host failed, nothing was claimed (or
      // Node's own module loader aborted in it, printing a stack instead of the hello)
      (childFault !== undefined &&
        r.exitCode === 5 &&
        /^genjob: EGJ_IO: local: the host failed before it could serve \(nothing was claimed\): /m.test(
          r.stderr,
        )) ||
      (childFault !== undefined &&
        r.exitCode === 2 &&
        /^genjob: EGJ_HOST_NOT_SERVING: local: did not answer as genjob serve/m.test(r.stderr));
    // a fault that also landed in a git command the CLI started (not in the CLI or its threads)
    const mine = new Set([main, ...r.calls.filter((c) => c.pid === main && c.thread).map((c) => c.thread)]);
    const inGit = s.gitChildren === true && r.calls.some((c) => c.injected && !mine.has(c.pid));
    if (r.exitCode !== 0 && inGit) {
      expect([2, 5], context).toContain(r.exitCode);
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('genjob: EGJ_'));
      expect(lines, context).toHaveLength(1);
      // git, its read failed, may answer as if the object were not there: "bad revision" (no commit)
      expect(lines[0], context).toMatch(/^genjob: EGJ_(GIT|IO|CHECK_NO_HEAD): /);
    } else if (r.exitCode !== 0 && !inLocalServe) {
      expect(r.exitCode, context).toBe(5);
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('genjob: EGJ_'));
      expect(lines, context).toHaveLength(1);
      expect(lines[0], context).toMatch(
        new RegExp(`^genjob: EGJ_IO: .*${b.repo}.*: [\\w ()]+ failed: .*\\(${errno}\\)`),
      );
    }
    // no job waits for a TTL: nothing is left in running/ by a worker that has exited, unless it said it
    // could not put the job back and that the next `work` takes it back at once (which finish proves)
    const saidPutBackFailed = /could not be put back .*; the next `genjob work` takes it back at once/.test(
      r.stderr,
    );
    if (saidPutBackFailed) expect(ls(b, 'running'), context).toEqual([`${key}.json`]);
    else if (s.leftRunning) s.leftRunning(b, key, context);
    else expect(ls(b, 'running'), context).toEqual([]);
  }
  if (s.side === 'host' && landing === 'host') {
    // the host's disk failed: the worker says so in one line, naming the host's EGJ_IO, and the job is
    // back in the queue (or the answer in hand was delivered all the same)
    expect(r.stderr, context).not.toMatch(/internal error|\n\s+at /);
    const named = `EGJ_IO: .*${b.cache}.*: [\\w ()]+ failed: .*\\(${errno}\\)`;
    if (r.exitCode === 5)
      // before its hello: nothing was claimed (the host's own line is relayed above it)
      expect(r.stderr, context).toMatch(
        new RegExp(`^genjob: EGJ_IO: .*the host failed before it could serve .*: ${named}`, 'm'),
      );
    else if (r.exitCode !== 0 && childFault !== undefined) {
      // a runtime fault landed in the host too (Node's abort on its eventfd): only the job's return is judged
      expect(r.exitCode, context).toBe(3);
      expect(r.stderr, context).toMatch(/back in the queue: /);
    } else if (r.exitCode !== 0) {
      expect(r.exitCode, context).toBe(3);
      // refused outright, or an answer whose body the host had to abort: its stderr names why, in the
      // closing line's "host said" or, when serve's line came through first, relayed as the job's own
      const relayed = new RegExp(`^\\[[0-9a-f]{12}\\] genjob serve: ${named}`, 'm');
      if (!relayed.test(r.stderr))
        expect(r.stderr, context).toMatch(
          new RegExp(
            `back in the queue: (the host refused: ${named}|.*host said: (.*\\\\x0a)?genjob serve: ${named})`,
          ),
        );
      else expect(r.stderr, context).toMatch(/back in the queue: /);
    }
    expect(ls(b, 'running'), context).toEqual([]);
  }
  await s.finish(b, key).catch((err: Error) => {
    throw new Error(`${context}\nre-run failed: ${err.message}`);
  });
  try {
    s.done(b, key, expected);
    const left = leftovers(b.repo);
    expect(left, `left behind: ${JSON.stringify(left)}`).toEqual([]);
    // a fault in Node's runtime can hang or kill a process mid-generation: excluded (see the header)
    if (landing === 'repo' || landing === 'missed' || (s.side === 'host' && landing === 'host'))
      expect(runs(b) - before).toBeLessThanOrEqual(
        s.name.startsWith('work') ? (consented.has(b.base) ? 2 : 1) : 0,
      );
  } catch (err) {
    throw new Error(`${context}\nafter the re-run: ${(err as Error).message}`);
  }
  return {
    scenario: s.name,
    ...point,
    errno,
    landing,
    exit: r.exitCode,
    paths: landed?.fds.length ? landed.fds : (landed?.paths ?? []),
  };
}

describe.skipIf(!haveStrace)('I/O faults injected with strace', () => {
  const expected: Partial<Expected> = {};
  beforeAll(async () => {
    const b = await freshBox();
    expected.original = snapshot(b.repo);
    const key = await mint(b);
    await work(b);
    await ok(b, ['apply', key]);
    expected.applied = snapshot(b.repo);
  });

  for (const s of SCENARIOS) {
    it(
      `${s.name}: every fault on a repository call is EGJ_IO, and a re-run finishes the job once`,
      async () => {
        await s.setUp?.();
        const template = await freshBox(s.env?.());
        const key = await s.prepare(template);
        // the starting state, kept before the probe changes the template: a copy, as each point's box is
        // (preparing it again would run the scenario's set-up commands twice for nothing)
        const start = box(tempDir('genjob-iofault-'), s.env?.());
        cloneSandbox(template.base, start.base);
        writeFileSync(start.gen, readFileSync(start.gen, 'utf8').replaceAll(template.count, start.count));
        const startKey = key;
        const probe = await runScenario(s, template, key, join(template.base, 'probe.log'));
        expect(probe.exitCode, probe.stderr).toBe(0);
        // the calls libuv's thread pool makes for the process (every fs/promises call) are points too
        const points = probePoints(probe, { repo: template.repo, cache: template.cache }, s.side, {
          threads: true,
        });
        expect(points.length).toBeGreaterThan(0);
        const all = points
          .filter((p) => ONLY_SYSCALLS === undefined || ONLY_SYSCALLS.includes(p.syscall))
          .flatMap((p) => errnosFor(p.syscall).map((errno) => ({ ...p, errno })));
        const pick = mulberry32(SEED + s.name.length);
        const chosen = ONLY
          ? all.filter((p) => `${p.syscall}#${p.n}:${p.errno}` === ONLY)
          : ALL
            ? all
            : sample(all, SAMPLE, pick);
        console.log(
          `${s.name}: ${points.length} repository call sites, ${all.length} points; running ${chosen.length} (GENJOB_IOFAULT_SEED=${SEED})`,
        );
        const results: PointResult[] = [];
        const failures: string[] = [];
        let i = 0;
        for (const p of chosen) {
          try {
            results.push(await runPoint(s, start, startKey, expected as Expected, p, p.errno, i++));
            if (lastLog) rmSync(lastLog, { force: true }); // kept for failures only
          } catch (err) {
            failures.push((err as Error).message);
            if (!KEEP_GOING) break; // the first broken rule fails the default run; a sweep counts them all
          }
        }
        const by = (f: (r: PointResult) => string) =>
          Object.entries(
            results.reduce<Record<string, number>>((acc, r) => {
              acc[f(r)] = (acc[f(r)] ?? 0) + 1;
              return acc;
            }, {}),
          )
            .map(([k, v]) => `${k}=${v}`)
            .join(' ');
        const excluded = results.filter((r) => r.excluded !== undefined);
        const line = `${s.name}: ${results.length + failures.length} points; landing ${by((r) => r.landing)}; exit ${by((r) => String(r.exit))}; excluded ${excluded.length}; failed ${failures.length}`;
        console.log(line);
        for (const r of excluded) console.log(`  excluded ${r.syscall}#${r.n} ${r.errno}: ${r.excluded}`);
        if (process.env.GENJOB_IOFAULT_REPORT) {
          const detail = [
            ...excluded.map((r) => `  EXCLUDED ${r.syscall}#${r.n} ${r.errno}: ${r.excluded}\n`),
            // a process ended by a signal (Node's own abort) passes only where the fault was not genjob's
            ...results
              .filter((r) => r.exit === undefined && r.excluded === undefined)
              .map(
                (r) =>
                  `  SIGNALLED ${r.syscall}#${r.n} ${r.errno}: landed ${r.landing} ${JSON.stringify(r.paths)}\n`,
              ),
            // an internal error (exit 1) passes only where the fault was not genjob's: listed, to be looked at
            ...results
              .filter((r) => r.exit === 1)
              .map(
                (r) =>
                  `  INTERNAL ${r.syscall}#${r.n} ${r.errno}: landed ${r.landing} ${JSON.stringify(r.paths)}\n`,
              ),
            ...failures.map((f) => `  FAIL ${f.split('\n').slice(0, 4).join(' | ')}\n`),
          ].join('');
          appendFileSync(process.env.GENJOB_IOFAULT_REPORT, `${line}\n${detail}`);
        }
        expect(failures).toEqual([]);
      },
      // a guard against a hang only, from the sample's size: each point and the probe may take a deadline
      KEEP_GOING ? 24 * 3_600_000 : (SAMPLE + 2) * DEADLINE_MS,
    );
  }
});
