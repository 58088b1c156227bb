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
import { leaseAgeMs, readLease } from './lease.js';
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
      const epoch = readLease(store, key)?.epoch ?? currentEpoch(store, key);
      try {
        moveState(store, store.layout.jobFile('running', key), store.layout.jobFile('queue', key));
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') return undefined; // committed or reaped meanwhile
        // the rename may have happened before a directory fsync failed: then the lease goes all the same
        if (!exists(store, store.layout.jobFile('running', key))) removeReapedLease(store, key, epoch);
        throw err;
      }
      removeReapedLease(store, key, epoch);
      journal(store, { event: 'reaped', key, epoch, age_s: Math.round(age / 1000) });
      return { key, epoch, age_s: Math.round(age / 1000) };
    });
    if (done) reaped.push(done);
  }
  return reaped;
}

/**
 * Remove the reaped attempt's lease, unless a newer attempt's lease has replaced it: once the job is back
 * in queue/, a worker may claim it and write its own lease (epoch + 1) before this runs (the move's
 * directory fsyncs can take long on a busy disk), and that worker would stand down at its next beat
 * without it, giving the job a third attempt. A lease that cannot be read (torn by a crash) goes.
 */
function removeReapedLease(store: Store, key: string, epoch: number): void {
  const lease = readLease(store, key);
  if (lease !== undefined && lease.epoch > epoch) return;
  store.fs.rmSync(store.layout.lease(key), { force: true });
}

/** The lease names a worker process on this host that no longer runs. */
function holderGone(store: Store, key: string): boolean {
  const lease = readLease(store, key);
  if (lease === undefined) return false;
  const { host, pid, start } = lease.worker;
  return ownerGone({ host, pid, ...(start === undefined ? {} : { start }) });
}
