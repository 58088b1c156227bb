// Leases: what readLease makes of a missing, hostile or torn lease file; a beat that finds its lease gone
// between the read and the touch; how the age of a running job is taken (the lease's mtime, else the later
// of the claim's mtime and ctime); removeLease only for the epoch that holds the lease — one temp .gen/ per test.
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { beginAttempt, type Worker } from '../../src/store/attempts.js';
import { claim } from '../../src/store/claim.js';
import { beat, leaseAgeMs, readLease, removeLease } from '../../src/store/lease.js';
import { mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

const W: Worker = { id: 'w1', host: 'h', pid: 1 };

/** A store with one minted job; `claimed` also moves it to running/. */
function oneJob(claimed = true): { store: Store; key: string } {
  const store = tempStore('genjob-lease-');
  const job = buildJob('lease job', [{ path: 'f.txt', sha256: sha256Hex('f') }]);
  mintJob(store, job);
  if (claimed) claim(store, job.key, 'w');
  return { store, key: job.key };
}

function setTimes(path: string, mtimeMs: number): void {
  const t = new Date(mtimeMs);
  utimesSync(path, t, t);
}

describe('readLease', () => {
  it('reads the record beginAttempt wrote, and no lease when there is none', () => {
    const { store, key } = oneJob();
    expect(readLease(store, key)).toBeUndefined();
    const rec = beginAttempt(store, key, W, 60, 'local');
    expect(readLease(store, key)).toEqual(rec);
    expect(readLease(store, key)).toMatchObject({
      key,
      epoch: 1,
      worker: W,
      ttl_s: 60,
      destination: 'local',
    });
  });

  it('reads a lease torn by a crash, a symlink or a FIFO in its place as no lease', () => {
    const { store, key } = oneJob();
    const path = store.layout.lease(key);
    writeFileSync(path, '{"key":"ab');
    expect(readLease(store, key)).toBeUndefined();
    rmSync(path);
    symlinkSync(store.layout.jobFile('running', key), path);
    expect(readLease(store, key)).toBeUndefined();
    rmSync(path);
    execFileSync('mkfifo', [path]);
    expect(readLease(store, key)).toBeUndefined();
  });

  it('reads a forged lease of another shape (a branch may commit .gen/) as no lease, and reap returns its job instead of crashing', async () => {
    const { store, key } = oneJob();
    const path = store.layout.lease(key);
    const good = beginAttempt(store, key, W, 60, 'local');
    const forged: unknown[] = [
      { epoch: 1 },
      { ...good, worker: null },
      { ...good, worker: { ...W, pid: '1' } },
      { ...good, worker: { host: 'h', pid: 1 } },
      { ...good, worker: { ...W, start: 'then' } },
      { ...good, epoch: 1.5 },
      { ...good, batch: 7 },
      { ...good, destination: undefined },
      { ...good, key: 1 },
      { ...good, ttl_s: '60' },
      { ...good, claimed_at: 0 },
      [good],
      null,
      'lease',
    ];
    for (const doc of forged) {
      writeFileSync(path, JSON.stringify(doc));
      expect(readLease(store, key), JSON.stringify(doc)).toBeUndefined();
    }
    writeFileSync(path, JSON.stringify({ ...good, worker: { ...W, start: 123 } }));
    expect(readLease(store, key)?.worker.start).toBe(123);
    // a fresh forged lease: reap asks whether its holder is gone, and must not crash on the shape
    writeFileSync(path, JSON.stringify({ epoch: 1 }));
    const { reapStale } = await import('../../src/store/reap.js');
    expect(await reapStale(store, 60)).toEqual([]);
    setTimes(path, Date.now() - 3_600_000);
    expect((await reapStale(store, 60)).map((r) => r.key)).toEqual([key]);
    expect(existsSync(store.layout.jobFile('queue', key))).toBe(true);
  });

  it('throws an I/O error reading the lease as EGJ_IO naming the lease, not as no lease', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    const path = store.layout.lease(key);
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'openSync' && args[0] === path) throw sysError('EIO', -5, 'open');
      return proceed();
    });
    const err = thrown(() => readLease(failing, key));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toMatch(new RegExp(`^${path}: open failed: i/o error \\(EIO\\)`));
  });
});

describe('beat', () => {
  it('reports the lease lost when it is removed between the read and the touch (a reap or a commit)', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    const path = store.layout.lease(key);
    const reapedMeanwhile = hookedStore(store, (call, args, proceed) => {
      if (call === 'utimesSync' && args[0] === path) rmSync(path);
      return proceed();
    });
    expect(beat(reapedMeanwhile, key, 1)).toBe(false);
    expect(existsSync(path)).toBe(false);
  });

  it('throws a touch that fails for another reason as EGJ_IO, instead of reporting the lease lost', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    const path = store.layout.lease(key);
    const failing = hookedStore(store, (call, _args, proceed) => {
      if (call === 'utimesSync') throw sysError('EROFS', -30, 'utime');
      return proceed();
    });
    const err = thrown(() => beat(failing, key, 1));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toMatch(new RegExp(`^${path}: utimes failed: .*\\(EROFS\\)`));
  });

  it('touches the lease of the epoch that holds it and no other, and reports which', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    beginAttempt(store, key, W, 60, 'local');
    const path = store.layout.lease(key);
    const past = Math.floor(Date.now() / 1000) * 1000 - 600_000;
    setTimes(path, past);
    expect(beat(store, key, 1)).toBe(false);
    expect(statSync(path).mtimeMs).toBe(past);
    expect(beat(store, key, 2)).toBe(true);
    expect(statSync(path).mtimeMs).toBeGreaterThan(past + 500_000);
  });
});

describe('leaseAgeMs', () => {
  it('ages a lease from its last beat (mtime), to the millisecond', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    const beatAt = Math.floor(Date.now() / 1000) * 1000 - 90_000;
    setTimes(store.layout.lease(key), beatAt); // moves the lease's ctime to now
    expect(leaseAgeMs(store, key, beatAt + 90_000)).toBe(90_000);
  });

  it('ages a claim without a lease from the claim (its ctime), not from the older mtime the job file kept', () => {
    const { store, key } = oneJob(false);
    setTimes(store.layout.jobFile('queue', key), Date.now() - 3_600_000);
    claim(store, key, 'w'); // the rename moves ctime, not mtime
    const running = statSync(store.layout.jobFile('running', key));
    expect(running.mtimeMs).toBeLessThan(Date.now() - 3_000_000);
    const now = Date.now() + 5_000;
    expect(leaseAgeMs(store, key, now)).toBe(now - running.ctimeMs);
  });

  it('ages a claim whose mtime is the later one from its mtime', () => {
    const { store, key } = oneJob();
    const path = store.layout.jobFile('running', key);
    const touched = Math.floor(Date.now() / 1000) * 1000 + 60_000; // a clock step: mtime after ctime
    setTimes(path, touched);
    expect(leaseAgeMs(store, key, touched + 1_000)).toBe(1_000);
  });

  it('reports age 0 for a key neither running nor leased', () => {
    const { store, key } = oneJob(false);
    expect(leaseAgeMs(store, key, Date.now() + 3_600_000)).toBe(0);
  });

  it('throws a stat that fails for another reason than a missing file as EGJ_IO', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    const failing = hookedStore(store, (call, _args, proceed) => {
      if (call === 'statSync') throw sysError('EACCES', -13, 'stat');
      return proceed();
    });
    const err = thrown(() => leaseAgeMs(failing, key));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toMatch(new RegExp(`^${store.layout.lease(key)}: stat failed: .*\\(EACCES\\)`));
  });
});

describe('removeLease', () => {
  it('removes the lease only for the epoch that holds it', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    removeLease(store, key, 2);
    expect(readLease(store, key)?.epoch).toBe(1);
    removeLease(store, key, 1);
    expect(existsSync(store.layout.lease(key))).toBe(false);
    removeLease(store, key, 1); // nothing left to remove: no error
  });

  it('does not fail when the lease goes between the read and the removal (the reaper took it)', () => {
    const { store, key } = oneJob();
    beginAttempt(store, key, W, 60, 'local');
    const path = store.layout.lease(key);
    const reapedMeanwhile = hookedStore(store, (call, args, proceed) => {
      if (call === 'rmSync' && args[0] === path) rmSync(path);
      return proceed();
    });
    expect(() => removeLease(reapedMeanwhile, key, 1)).not.toThrow();
    expect(existsSync(path)).toBe(false);
  });
});
