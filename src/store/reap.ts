// Reap stale leases: a running job whose last heartbeat is older than the TTL goes back to
// queue/ (journalled); its next attempt gets epoch + 1. Reaping never deletes a job. The check
// and the move happen under the key's lock, the same lock a committing worker holds. It also sweeps
// the temp files of writers that died inside a durable publish (src/store/durable.ts sweepStaleTemps) and
// their staging directories (sweep-staging.ts). A lease held by a process of this host that is gone is
// reaped at once, whatever its age: no job waits out a TTL for a worker known to be dead.
import { errnoOf } from '../core/errors.js';
import { currentEpoch } from './attempts.js';
import { batchHeldKeys } from './batch-outbox.js';
import { exists, moveState, sweepStaleTemps } from './durable.js';
import { keysIn } from './job-states.js';
import { journal } from './journal.js';
import { withKeyLock } from './key-lock.js';
import { leaseAgeMs, moveWithoutLease, readLease } from './lease.js';
import { ownerGone } from './process-identity.js';
import type { Store } from './store.js';
import { sweepDeadStaging } from './sweep-staging.js';

export interface Reaped {
  key: string;
  epoch: number;
  age_s: number;
}

export async function reapStale(store: Store, ttlS: number, now = Date.now()): Promise<Reaped[]> {
  const reaped: Reaped[] = [];
  sweepStaleTemps(store); // temp files of writers that died inside publish/replace
  sweepDeadStaging(store); // staging directories of workers that died mid-extract
  // a job waiting in a provider's batch is not a dead worker's: its batch record owns it
  const inBatch = batchHeldKeys(store);
  for (const key of keysIn(store, 'running')) {
    if (leaseAgeMs(store, key, now) <= ttlS * 1000 && !holderGone(store, key)) continue;
    if (inBatch.has(key) && inBatch.get(key) === currentEpoch(store, key)) continue;
    const done = await withKeyLock(store, key, () => {
      const age = leaseAgeMs(store, key, Date.now());
      // it beat while we waited for the lock
      if (age <= ttlS * 1000 && !holderGone(store, key)) return undefined;
      // read before the move: a read that fails then changes nothing
      const lease = readLease(store, key);
      const epoch = lease?.epoch ?? currentEpoch(store, key);
      const running = store.layout.jobFile('running', key);
      // Stryker disable next-line ConditionalExpression: without it the move finds ENOENT and the same lease is linked back
      if (!exists(store, running)) return undefined; // committed or reaped meanwhile: its lease is not ours
      try {
        moveWithoutLease(store, key, lease, () =>
          moveState(store, running, store.layout.jobFile('queue', key)),
        );
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') return undefined; // committed or reaped meanwhile
        throw err;
      }
      journal(store, { event: 'reaped', key, epoch, age_s: Math.round(age / 1000) });
      return { key, epoch, age_s: Math.round(age / 1000) };
    });
    if (done) reaped.push(done);
  }
  return reaped;
}

/** The lease names a worker process on this host that no longer runs. */
function holderGone(store: Store, key: string): boolean {
  const lease = readLease(store, key);
  if (lease === undefined) return false;
  return ownerGone(lease.worker);
}
