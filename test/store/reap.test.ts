// Reaping, at its edges: a lease exactly TTL old is kept, one a millisecond older is taken; the re-check under
// the key lock (a beat while the reaper waited, the exact TTL by the clock it reads then); a job committed
// or moved away while the reaper waited; which epoch the journal and the result name (the lease's, else the
// newest attempt) and the age they report; a batch holds a job only for the epoch it was submitted under; a
// lease of a reused pid of this host is reaped at once; the lease of an attempt that claimed the job the
// moment it was back in queue/ is left to it — one temp .gen/ per test.
import { existsSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { beginAttempt, epochsOf, type Worker } from '../../src/store/attempts.js';
import { type BatchRecord, recordIntent } from '../../src/store/batch-outbox.js';
import { claim } from '../../src/store/claim.js';
import { readJournal } from '../../src/store/journal.js';
import { lockNamed } from '../../src/store/key-lock.js';
import { beat, readLease } from '../../src/store/lease.js';
import { mintJob } from '../../src/store/mint-job.js';
import { reapStale } from '../../src/store/reap.js';
import type { Store } from '../../src/store/store.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { racingClaim } from '../helpers/racing-claim.js';
import { tempStore } from '../helpers/temp-store.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A worker on another host: never judged gone from here, so only the lease's age decides. */
const ELSEWHERE: Worker = { id: 'w1', host: 'elsewhere', pid: 1 };

/** A store with `n` claimed jobs, each with one attempt (epoch 1) whose lease is its own. */
function running(n = 1, worker = ELSEWHERE): { store: Store; keys: string[] } {
  const store = tempStore('genjob-reap-');
  const keys = Array.from({ length: n }, (_, i) => {
    const job = buildJob(`reap job ${i}`, [{ path: `f${i}.txt`, sha256: sha256Hex(`${i}`) }]);
    mintJob(store, job);
    claim(store, job.key, 'w');
    beginAttempt(store, job.key, worker, 30, 'local');
    return job.key;
  });
  return { store, keys };
}

/** Set the last beat of `path` to `ms` (whole seconds, so mtimeMs reads back exactly). */
function beatAt(path: string, ms: number): number {
  const whole = Math.floor(ms / 1000) * 1000;
  const t = new Date(whole);
  utimesSync(path, t, t);
  return whole;
}

const reapedEvents = (store: Store, key: string) =>
  readJournal(store, key).filter((e) => e.event === 'reaped');

describe('reapStale at the TTL', () => {
  it('keeps a lease exactly TTL old and takes it one millisecond later', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    const last = beatAt(store.layout.lease(key), Date.now() - 600_000);
    expect(await reapStale(store, 30, last + 30_000)).toEqual([]);
    expect(existsSync(store.layout.jobFile('running', key))).toBe(true);
    expect(reapedEvents(store, key)).toEqual([]);
    const reaped = await reapStale(store, 30, last + 30_001);
    expect(reaped.map((r) => r.key)).toEqual([key]);
  });

  it('re-checks the age under the key lock by the clock then: exactly TTL old is still kept', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    const last = beatAt(store.layout.lease(key), Date.now() - 600_000);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(last + 30_000);
    // the first look (at a later `now`) finds it stale; the look under the lock finds it exactly TTL old
    expect(await reapStale(store, 30, last + 60_000)).toEqual([]);
    vi.setSystemTime(last + 30_001);
    expect((await reapStale(store, 30, last + 60_000)).map((r) => r.key)).toEqual([key]);
  });

  it('leaves a job whose lease beat while the reaper waited for the key lock', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    beatAt(store.layout.lease(key), Date.now() - 600_000);
    const held = await lockNamed(store, `key-${key}`);
    const reaping = reapStale(store, 30);
    await sleep(120); // the reaper found the lease stale and now polls for the lock
    expect(beat(store, key, 1)).toBe(true);
    await held.release();
    expect(await reaping).toEqual([]);
    expect(existsSync(store.layout.jobFile('running', key))).toBe(true);
    expect(readLease(store, key)?.epoch).toBe(1);
    expect(reapedEvents(store, key)).toEqual([]);
  });
});

describe('reapStale, what it records', () => {
  it('journals the reap with the key, the lease epoch and the age in whole seconds, and returns the same', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    beatAt(store.layout.lease(key), Date.now() - 90_000);
    const reaped = await reapStale(store, 30);
    expect(reaped).toHaveLength(1);
    const { age_s } = reaped[0]!;
    expect(age_s === 90 || age_s === 91).toBe(true); // the beat was set on a whole second, up to 1 s back
    expect(reaped).toEqual([{ key, epoch: 1, age_s }]);
    const events = reapedEvents(store, key);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event: 'reaped', key, epoch: 1, age_s });
    expect(existsSync(store.layout.lease(key))).toBe(false);
  });

  it('names the epoch of the lease, even when a newer attempt was recorded without becoming the lease', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    const lease = readFileSync(store.layout.lease(key));
    beginAttempt(store, key, ELSEWHERE, 30, 'local'); // epoch 2 ...
    writeFileSync(store.layout.lease(key), lease); // ... but its lease write was lost: epoch 1 still holds it
    beatAt(store.layout.lease(key), Date.now() - 600_000);
    const reaped = await reapStale(store, 30);
    expect(reaped.map((r) => [r.key, r.epoch])).toEqual([[key, 1]]);
    expect(reapedEvents(store, key)[0]).toMatchObject({ epoch: 1 });
  });

  it('names the newest attempt when the lease is gone', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    beginAttempt(store, key, ELSEWHERE, 30, 'local');
    rmSync(store.layout.lease(key));
    beatAt(store.layout.jobFile('running', key), Date.now() - 600_000);
    await sleep(5);
    const reaped = await reapStale(store, 0.001);
    expect(epochsOf(store, key)).toEqual([1, 2]);
    expect(reaped.map((r) => [r.key, r.epoch])).toEqual([[key, 2]]);
    expect(reapedEvents(store, key)[0]).toMatchObject({ epoch: 2 });
  });
});

describe('reapStale and a job that moves meanwhile', () => {
  it('reaps nothing and journals nothing when the job left running/ while the reaper waited (committed)', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    beatAt(store.layout.lease(key), Date.now() - 600_000);
    const from = store.layout.jobFile('running', key);
    const committedMeanwhile = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === from) renameSync(from, store.layout.jobFile('received', key));
      return proceed();
    });
    expect(await reapStale(committedMeanwhile, 30)).toEqual([]);
    expect(existsSync(store.layout.jobFile('queue', key))).toBe(false);
    expect(existsSync(store.layout.lease(key))).toBe(true); // the committer's to remove, not the reaper's
    expect(reapedEvents(store, key)).toEqual([]);
  });

  it('fails with EGJ_IO naming the job when the move back to queue/ fails for another reason', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    const last = beatAt(store.layout.lease(key), Date.now() - 600_000);
    const from = store.layout.jobFile('running', key);
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === from) throw sysError('EIO', -5, 'rename');
      return proceed();
    });
    const err = await reapStale(failing, 30).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(IoError);
    expect(err?.message).toMatch(
      new RegExp(`^${from} → ${store.layout.jobFile('queue', key)}: rename failed: i/o error \\(EIO\\)`),
    );
    expect(existsSync(from)).toBe(true);
    // still running, still its lease: the attempt record linked back, with the same last beat
    expect(statSync(store.layout.lease(key)).mtimeMs).toBe(last);
    expect(statSync(store.layout.lease(key)).ino).toBe(statSync(store.layout.attempt(key, 1)).ino);
    expect(readLease(store, key)?.epoch).toBe(1);
    expect(reapedEvents(store, key)).toEqual([]);
  });

  it('removes the lease all the same when the move renamed the job and then its directory fsync failed', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    beatAt(store.layout.lease(key), Date.now() - 600_000);
    const from = store.layout.jobFile('running', key);
    let renamed = false;
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === from) renamed = true;
      else if (call === 'fsyncSync' && renamed) throw sysError('EIO', -5, 'fsync');
      return proceed();
    });
    await expect(reapStale(failing, 30)).rejects.toThrow(/fsync failed: i\/o error \(EIO\)/);
    expect(existsSync(store.layout.jobFile('queue', key))).toBe(true);
    expect(existsSync(store.layout.lease(key))).toBe(false); // a queued job with no lease: the next claim starts clean
  });
});

describe('reapStale and the next attempt', () => {
  it("leaves the lease of an attempt that claimed the job between the reaper's move and its removal of the old lease", async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    beatAt(store.layout.lease(key), Date.now() - 600_000);
    const from = store.layout.jobFile('running', key);
    let next: number | undefined;
    // another worker claims the job the moment it is back in queue/ and writes its lease (epoch 2),
    // while the reaper is still making its move durable
    const racing = hookedStore(store, (call, args, proceed) => {
      const result = proceed();
      if (call === 'renameSync' && args[0] === from && next === undefined) {
        claim(store, key, 'w2');
        next = beginAttempt(store, key, { id: 'w2', host: 'elsewhere', pid: 2 }, 30, 'local').epoch;
      }
      return result;
    });
    const reaped = await reapStale(racing, 30);
    expect(reaped.map((r) => [r.key, r.epoch])).toEqual([[key, 1]]);
    expect(next).toBe(2);
    // the new attempt still holds its lease: its heartbeat finds it, and it is not stood down
    expect(readLease(store, key)?.epoch).toBe(2);
    expect(beat(store, key, 2)).toBe(true);
    expect(existsSync(store.layout.jobFile('running', key))).toBe(true);
  });
});

describe('reapStale and the next attempt, at the lease', () => {
  it('never removes a lease once the job is back in queue/: a claim between its look at the lease and a removal keeps its own', async () => {
    const { store, keys } = running();
    const key = keys[0]!;
    beatAt(store.layout.lease(key), Date.now() - 600_000);
    const { racing, claimNow } = racingClaim(store, key);
    expect((await reapStale(racing, 30)).map((r) => r.epoch)).toEqual([1]);
    claimNow();
    expect(readLease(store, key)?.epoch).toBe(2);
    expect(beat(store, key, 2)).toBe(true);
  });
});

describe('reapStale and who holds the job', () => {
  const batchOf = (key: string, epoch: number): BatchRecord => ({
    run: 'r1',
    state: 'submitted',
    created_at: '2026-12-01T00:00:00Z',
    jobs: [{ key, epoch, job_digest: '0'.repeat(64), format: 'structured' }],
    file_id: 'f',
    batch_id: 'b',
    provider_status: null,
  });

  it('reaps a stale job whose open batch entry is for an older epoch than its newest attempt', async () => {
    const { store, keys } = running(2);
    const [older, current] = keys as [string, string];
    beginAttempt(store, older, ELSEWHERE, 30, 'local'); // epoch 2: the batch's epoch 1 is superseded
    recordIntent(
      store,
      { ...batchOf(older, 1), jobs: [...batchOf(older, 1).jobs, ...batchOf(current, 1).jobs] },
      Buffer.from('{}\n'),
    );
    for (const k of keys) beatAt(store.layout.lease(k), Date.now() - 600_000);
    const reaped = await reapStale(store, 30);
    expect(reaped.map((r) => [r.key, r.epoch])).toEqual([[older, 2]]);
    expect(existsSync(store.layout.jobFile('running', current))).toBe(true);
  });

  it('reaps at once a fresh lease whose pid on this host now belongs to another process (another start time)', async () => {
    const reused: Worker = { id: 'w', host: hostname(), pid: process.ppid, start: 1 };
    const { store, keys } = running(1, reused);
    const key = keys[0]!;
    const reaped = await reapStale(store, 3600);
    expect(reaped.map((r) => r.key)).toEqual([key]);
    expect(existsSync(store.layout.jobFile('queue', key))).toBe(true);
  });

  it('keeps a fresh lease of this host that records no start time while its pid runs', async () => {
    const live: Worker = { id: 'w', host: hostname(), pid: process.ppid };
    const { store } = running(1, live);
    expect(await reapStale(store, 3600)).toEqual([]);
  });
});
