// Leases: leases/<key>.json names the current attempt; its mtime is the heartbeat.
// A beat is a utimes() call (cheap, no fsync needed: a lost beat after a crash only makes
// the lease look older, which is the safe direction). A lease older than its TTL is stale.
import { errnoOf } from '../core/errors.js';
import { type LeaseRecord, readLeaseShaped } from './attempts.js';
import { exists } from './durable.js';
import type { Store } from './store.js';

export function readLease(store: Store, key: string): LeaseRecord | undefined {
  // a torn lease (a crash) is no lease, stale once the job is old enough; so is one of another shape
  return readLeaseShaped(store, store.layout.lease(key));
}

/** Renew the lease if it is still ours; false when it was reaped or superseded. */
export function beat(store: Store, key: string, epoch: number): boolean {
  const lease = readLease(store, key);
  if (!lease || lease.epoch !== epoch) return false;
  const now = new Date();
  try {
    store.fs.utimesSync(store.layout.lease(key), now, now);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false;
    throw err;
  }
  return true;
}

/** Age in ms of the last sign of life for a running job: its lease's beat, else the claim itself. */
export function leaseAgeMs(store: Store, key: string, now = Date.now()): number {
  for (const path of [store.layout.lease(key), store.layout.jobFile('running', key)]) {
    try {
      const st = store.fs.statSync(path);
      // ctime changes on rename, so a claim without a lease yet is aged from the claim
      return now - Math.max(st.mtimeMs, path.endsWith(`leases/${key}.json`) ? 0 : st.ctimeMs);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
  }
  return 0;
}

export function removeLease(store: Store, key: string, epoch: number): void {
  const lease = readLease(store, key);
  if (lease && lease.epoch === epoch) store.fs.rmSync(store.layout.lease(key), { force: true });
}

/**
 * Move a job out of running/ with its lease gone first (the caller holds the key lock and has judged the
 * lease). The lease must go while the job is still in running/, where no worker can claim it: once the
 * job is back in queue/, another worker may claim it and rename its own lease in, and a removal after the
 * move can take that one away, even with a check of its epoch just before (both processes often wake
 * from the same journal commit's fsync at once); that worker then stands down and the job runs again.
 * When the move fails with the job still in running/ (or because it had already left), the lease comes
 * back as it was: it is the attempt record under a second name (beginAttempt), so linking that record
 * again restores its bytes and its last beat, and a holder known to be gone is still judged gone by the
 * next reap. `held` is the lease as the caller read it under the lock (undefined: there was none).
 */
export function moveWithoutLease(
  store: Store,
  key: string,
  held: LeaseRecord | undefined,
  move: () => void,
): void {
  const path = store.layout.lease(key);
  store.fs.rmSync(path, { force: true });
  try {
    move();
  } catch (err) {
    // ENOENT: another hand had moved the job already (the lease was never ours to take)
    const gone = errnoOf(err) === 'ENOENT';
    if (held !== undefined && (gone || exists(store, store.layout.jobFile('running', key)))) {
      try {
        store.fs.linkSync(store.layout.attempt(key, held.epoch), path);
      } catch {
        // left without a lease: the next reap takes the job once its claim is older than the TTL
      }
    }
    throw err;
  }
}
