// `genjob work --watch`: picks up jobs present at start and minted later, and a job a reaper put back;
// on SIGTERM it stops claiming, lets the job in flight finish and exits 0 — or, past --grace, kills the
// session and requeues it; a second Ctrl-C does that at once. A generation cut that way was abandoned
// by its dead serve: the next plain `work` generates it again, never dead-letters it. Nothing is left
// in running/ without a live lease.
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob, type Job } from '../../src/core/job.js';
import { peekEpoch } from '../../src/core/receipt-peek.js';
import { ResultCache } from '../../src/remote/result-cache.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { deadLetterFile } from '../../src/store/dead-letter.js';
import { publishExclusive } from '../../src/store/durable.js';
import { readJournal } from '../../src/store/journal.js';
import { jobFileBytes, mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { afterTest, tempRepo } from '../helpers/temp-store.js';
import { CLI, spawnCli, until as untilPolls, workerRepo } from './worker-helpers.js';

const until = (what: string, cond: () => boolean, explain?: () => string) =>
  untilPolls(what, cond, 60_000, explain); // polls of 10 ms: a guard against a hang only

// An instruction "block <path>" makes the generator wait for the release file first.
const GENERATOR = `set -- $GENJOB_INSTRUCTION
if [ "$1" = block ]; then : > "$STARTED"; while [ ! -e "$RELEASE" ]; do sleep 0.05; done; shift; fi
for p in "$@"; do printf 'new %s\\n' "$p" > "$p"; done
`;

function setup() {
  const { base, root, store, generator } = workerRepo('genjob-watch-', GENERATOR);
  const env = {
    ...process.env,
    XDG_CACHE_HOME: join(base, 'cache'),
    STARTED: join(base, 'started'),
    RELEASE: join(base, 'release'),
  };
  let n = 0;
  /** A job creating a new file; `block` makes its generation wait for the release file. */
  const newJob = (block = false): Job => {
    n += 1;
    return buildJob(`${block ? 'block ' : ''}f${n}.txt`, [{ path: `f${n}.txt`, sha256: null }]);
  };
  const watch = (extra: string[] = []) => {
    const child = spawnCli(
      root,
      ['work', '--watch', '--concurrency', '2', '--json', ...generator, ...extra],
      env,
    );
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    afterTest(() => {
      writeFileSync(join(base, 'release'), '');
      child.kill('SIGKILL');
    });
    return { child, stderr: () => stderr };
  };
  const received = (key: string) => existsSync(store.layout.jobFile('received', key));
  return { base, root, store, env, generator, newJob, watch, received };
}

/** No job in running/ without a lease whose heartbeat is recent. */
function noOrphanClaims(store: Store): void {
  for (const name of readdirSync(store.layout.dir('running'))) {
    const lease = store.layout.lease(name.replace(/\.json$/, ''));
    expect(existsSync(lease), `${name} is running without a lease`).toBe(true);
  }
}

describe('work --watch', () => {
  it('works jobs present at start, jobs minted later and a job a reaper requeued, then stops on SIGTERM with exit 0', async () => {
    const { store, newJob, watch, received } = setup();
    const early = [newJob(), newJob()].map((j) => mintJob(store, j).key);
    const w = watch();
    await until('the jobs present at start', () => early.every(received));

    const later = [newJob(), newJob()].map((j) => mintJob(store, j).key);
    await until('the jobs minted after the start', () => later.every(received));

    // a worker that died after its claim: job in running/, epoch 1, a lease that stopped beating long ago
    const orphan = newJob();
    publishExclusive(store, store.layout.jobFile('running', orphan.key), jobFileBytes(orphan));
    beginAttempt(store, orphan.key, { id: 'dead-worker', host: 'gone', pid: 1 }, 1, 'local');
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(store.layout.lease(orphan.key), past, past);
    // a TTL far above the watcher's live leases (their beats come every 15 s) and far below the
    // orphan's hour-old one: with a 1 s TTL this reaper would also reap the watcher's own live jobs
    const reaper = await spawnCli(store.root, ['reap', '--lease-ttl', '600'], process.env);
    expect(reaper.exitCode).toBe(0);
    await until(
      'the requeued job',
      () => received(orphan.key),
      () =>
        `journal: ${JSON.stringify(readJournal(store, orphan.key))}\nqueue: ${readdirSync(store.layout.dir('queue'))}\nrunning: ${readdirSync(store.layout.dir('running'))}\nworker stderr: ${w.stderr()}`,
    );
    // one reap, one new attempt: the journal says which attempt came in between if not
    expect(
      peekEpoch(readFileSync(store.layout.receipt(orphan.key))),
      `journal: ${JSON.stringify(readJournal(store, orphan.key))}\nworker stderr: ${w.stderr()}`,
    ).toBe(2);

    w.child.kill('SIGTERM');
    const done = await w.child;
    expect(done.exitCode, w.stderr()).toBe(0);
    expect(w.stderr()).toMatch(/SIGTERM: no new claims/);
    const outcomes = (JSON.parse(done.stdout) as { outcomes: Array<{ key: string; outcome: string }> })
      .outcomes;
    expect(outcomes.map((o) => o.key).sort()).toEqual([...early, ...later, orphan.key].sort());
    expect(outcomes.every((o) => o.outcome === 'received')).toBe(true);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([]);
    expect(readdirSync(store.layout.dir('running'))).toEqual([]);
    expect(readJournal(store, orphan.key).some((e) => e.event === 'reaped')).toBe(true);
  });

  it('after SIGTERM claims nothing new and lets the job in flight finish before exiting 0', async () => {
    const { base, store, newJob, watch, received } = setup();
    const w = watch();
    const slow = mintJob(store, newJob(true)).key;
    await until('the slow generation to start', () => existsSync(join(base, 'started')));
    w.child.kill('SIGTERM');
    await until('the stop notice', () => /no new claims/.test(w.stderr()));
    const after = mintJob(store, newJob()).key; // minted after the stop: must stay queued
    noOrphanClaims(store);
    writeFileSync(join(base, 'release'), '');
    const done = await w.child;
    expect(done.exitCode, w.stderr()).toBe(0);
    expect(received(slow)).toBe(true);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${after}.json`]);
    expect(readdirSync(store.layout.dir('running'))).toEqual([]);
  });

  it('requeues a job still in flight when --grace runs out, and exits 0', async () => {
    const { base, store, newJob, watch } = setup();
    const w = watch(['--grace', '0.5']);
    const stuck = mintJob(store, newJob(true)).key;
    await until('the stuck generation to start', () => existsSync(join(base, 'started')));
    w.child.kill('SIGTERM');
    const done = await w.child;
    expect(done.exitCode, w.stderr()).toBe(0);
    expect(JSON.parse(done.stdout).outcomes).toMatchObject([{ key: stuck, outcome: 'requeued' }]);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${stuck}.json`]);
    expect(readdirSync(store.layout.dir('running'))).toEqual([]);
    expect(existsSync(store.layout.lease(stuck))).toBe(false);
    expect(readJournal(store, stuck).some((e) => e.event === 'requeued')).toBe(true);
  });

  it('says how long it waits after Ctrl-C; a second Ctrl-C stops at once and puts the job back unspent (exit 130)', async () => {
    const { base, store, newJob, watch } = setup();
    const w = watch(['--grace', '3600']); // without the second Ctrl-C this run would wait an hour
    const stuck = mintJob(store, newJob(true)).key;
    await until('the stuck generation to start', () => existsSync(join(base, 'started')));
    w.child.kill('SIGINT');
    await until('the stop notice', () => /SIGINT: no new claims/.test(w.stderr()));
    expect(w.stderr()).toContain(
      'up to 3600 s (--grace); Ctrl-C again stops now and puts them back in the queue',
    );
    w.child.kill('SIGINT');
    const done = await w.child;
    expect(done.exitCode, w.stderr()).toBe(130);
    expect(w.stderr()).toContain('SIGINT again: stopping now; jobs in flight go back to the queue');
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${stuck}.json`]);
    expect(readdirSync(store.layout.dir('running'))).toEqual([]);
    const requeued = readJournal(store, stuck).filter((e) => e.event === 'requeued');
    expect(requeued.map((e) => e.attempt_spent)).toEqual([false]);
  });

  it('after Ctrl-C past --grace, a plain work --drain generates the job again (its serve is gone: abandoned, not in doubt)', async () => {
    const { root, base, store, env, generator, newJob, watch, received } = setup();
    const w = watch(['--grace', '0.5']);
    const key = mintJob(store, newJob(true)).key;
    await until('the slow generation to start', () => existsSync(join(base, 'started')));
    w.child.kill('SIGINT');
    expect((await w.child).exitCode, w.stderr()).toBe(130);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${key}.json`]);

    writeFileSync(join(base, 'release'), ''); // the next generation runs through
    const drain = await spawnCli(root, ['work', '--drain', '--json', ...generator], env);
    expect(drain.exitCode, String(drain.stderr)).toBe(0);
    expect(received(key)).toBe(true);
    expect(readdirSync(store.layout.dir('dead'))).toEqual([]);
    expect(String(drain.stderr)).toMatch(/which has since died, was abandoned .*; generating again/);
    expect(String(drain.stderr)).not.toContain('EGJ_GENERATION_IN_DOUBT');
    // the cut attempt and the in-doubt fetch spent nothing: the job never neared --max-attempts
    expect(
      readJournal(store, key)
        .filter((e) => e.event === 'requeued')
        .map((e) => e.attempt_spent),
    ).toEqual([false]);
  });
});

describe('a generation in doubt on its host', () => {
  it('is set aside in dead/ at the first refusal without spending an attempt, and genjob retry brings it back with consent', async () => {
    const { base, root, store, generator } = workerRepo('genjob-indoubt-', 'printf "new\\n" > f.txt\n');
    const env = { ...process.env, XDG_CACHE_HOME: join(base, 'cache') };
    const job = buildJob('make f.txt', [{ path: 'f.txt', sha256: null }]);
    const { key, digest } = mintJob(store, job);
    // a generation recorded as started by a serve this host cannot judge (another host's): in doubt
    const cache = new ResultCache(join(base, 'cache', 'genjob'));
    await cache.init();
    const name = cache.entryName(key, generator[1]!, digest);
    const started = { host: 'another-host', pid: 4242, start: 1, started_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(join(cache.dir, 'started', `${name}.json`), JSON.stringify(started));

    const first = await spawnCli(root, ['work', '--drain', '--json', ...generator], env);
    expect(first.exitCode, String(first.stderr)).toBe(0);
    expect(JSON.parse(String(first.stdout)).outcomes).toMatchObject([{ key, outcome: 'dead' }]);
    expect(String(first.stderr)).toContain(`until you consent: genjob retry ${key.slice(0, 12)}`);
    expect(readJournal(store, key).filter((e) => e.event === 'attempt')).toHaveLength(1);
    expect(existsSync(join(store.layout.attemptsDir(key), '1.unspent'))).toBe(true);

    const retried = await spawnCli(root, ['retry', key.slice(0, 12)], env);
    expect(retried.exitCode, String(retried.stderr)).toBe(0);
    expect(String(retried.stdout)).toContain('it was in doubt on its host');
    const again = await spawnCli(root, ['work', '--drain', ...generator], env);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(existsSync(store.layout.jobFile('received', key))).toBe(true);
  });

  it('a generation still running for another delivery: the waiting attempt goes back unspent (EGJ_GENERATION_RUNNING)', async () => {
    // two repositories mint the same job and share one host (a local serve on one cache dir)
    const { base, store: first } = workerRepo('genjob-running-', GENERATOR);
    const { root: root2, store: second } = tempRepo('genjob-running2-');
    const env = { ...process.env, STARTED: join(base, 'started'), RELEASE: join(base, 'release') };
    const cacheDir = join(base, 'host-cache');
    const launch = `${process.execPath} ${CLI} serve --session --cache-dir ${cacheDir} --generator-bind-rw ${base}`;
    const flags = ['--generator', `sh ${join(base, 'gen.sh')}`, '--launch', launch];
    // the launched serve gets only what --launch-env names; its generator what --generator-env names
    const passEnv = ['STARTED', 'RELEASE'].flatMap((n) => ['--launch-env', n, '--generator-env', n]);
    const job = buildJob('block f1.txt', [{ path: 'f1.txt', sha256: null }]);
    const { key } = mintJob(first, job);
    expect(mintJob(second, job).key).toBe(key);
    const slow = spawnCli(first.root, ['work', '--once', ...flags, ...passEnv], env);
    afterTest(() => {
      writeFileSync(join(base, 'release'), '');
      slow.kill('SIGKILL');
    });
    await until('the first generation to start', () => existsSync(join(base, 'started')));
    // a deadline of 1 s: the second delivery waits that long for the first, then goes back
    const waiting = await spawnCli(
      root2,
      ['work', '--once', '--json', '--timeout', '1', ...flags, ...passEnv],
      env,
    );
    expect(waiting.exitCode, String(waiting.stderr)).toBe(3);
    expect(JSON.parse(String(waiting.stdout)).outcomes).toMatchObject([
      { key, outcome: 'requeued', attempt_spent: false },
    ]);
    expect(String(waiting.stderr)).toContain('EGJ_GENERATION_RUNNING');
    writeFileSync(join(base, 'release'), '');
    expect((await slow).exitCode).toBe(0);
    // and the next attempt is answered from the cache: the generator ran once
    const again = await spawnCli(root2, ['work', '--once', ...flags, ...passEnv], env);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(existsSync(second.layout.jobFile('received', key))).toBe(true);
  });

  it('genjob retry also takes a job dead/ holds because it ran out of attempts', async () => {
    const { root, store } = workerRepo('genjob-exhausted-', '');
    const { key } = mintJob(store, buildJob('make g.txt', [{ path: 'g.txt', sha256: null }]));
    deadLetterFile(store, store.layout.jobFile('queue', key), `${key}.job`, {
      key,
      code: 'EGJ_ATTEMPTS_EXHAUSTED',
      reason: 'no usable answer after 3 attempts',
    });
    const r = await spawnCli(root, ['retry', key], process.env);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${key}.json`]);
  });
});
