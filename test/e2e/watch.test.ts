// `genjob work --watch`: picks up jobs present at start and minted later, and a job a reaper put back;
// on SIGTERM it stops claiming, lets the job in flight finish and exits 0 — or, past --grace, kills the
// session and requeues it. Nothing is left in running/ without a live lease.
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob, type Job } from '../../src/core/job.js';
import { peekEpoch } from '../../src/core/receipt-peek.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { publishExclusive } from '../../src/store/durable.js';
import { readJournal } from '../../src/store/journal.js';
import { jobFileBytes, mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { afterTest } from '../helpers/temp-store.js';
import { spawnCli, until as untilPolls, workerRepo } from './worker-helpers.js';

const until = (what: string, cond: () => boolean, explain?: () => string) =>
  untilPolls(what, cond, 3000, explain); // polls of 10 ms

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
  return { base, root, store, env, newJob, watch, received };
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
    expect(peekEpoch(readFileSync(store.layout.receipt(orphan.key)))).toBe(2);

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
  }, 90_000);

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
  }, 60_000);

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
  }, 60_000);
});
