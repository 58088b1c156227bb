// Leases: leases/<key>.json names the current attempt; its mtime is the heartbeat.
// A beat is a utimes() call (cheap, no fsync needed: a lost beat after a crash only makes
// the lease look older, which is the safe direction). A lease older than its TTL is stale.
import { errnoOf } from '../core/errors.js';
import type { LeaseRecord } from './attempts.js';
import { readRecord } from './durable.js';
import type { Store } from './store.js';

export function readLease(store: Store, key: string): LeaseRecord | undefined {
  const bytes = readRecord(store, store.layout.lease(key));
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8')) as LeaseRecord;
  } catch {
    return undefined; // torn by a crash: treated like no lease (stale once the job is old enough)
  }
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
