// Cancel a queued or running job: under the key lock its receipt and outputs, if a crash left any
// (give-up.ts), then its file move to dead/ with code EGJ_CANCELLED (a rename: the job is in its state
// or in dead/, never both), and a running job's lease is removed. Its worker sees the lease gone at its
// next heartbeat, asks the host on its session to kill the generator, and stands down; nothing it brings
// back is ever committed.
import { ConflictError } from '../core/errors.js';
import { CANCELLED, deadJobOf, deadReason } from './dead-jobs.js';
import { deadLetterFile } from './dead-letter.js';
import { exists } from './durable.js';
import { finishGivenUp, setAsideResult } from './give-up.js';
import { findJob } from './job-states.js';
import { journal } from './journal.js';
import { withKeyLock } from './key-lock.js';
import type { Store } from './store.js';
import { prunedState, readTombstone } from './tombstone.js';

export async function cancelJob(
  store: Store,
  key: string,
  reason?: string,
): Promise<{ state: 'queue' | 'running'; dead: string; result: string[] }> {
  const why = { key, code: CANCELLED, reason: `cancelled by the user${reason ? `: ${reason}` : ''}` };
  return withKeyLock(store, key, () => {
    const found = findJob(store, key);
    if (found?.state !== 'queue' && found?.state !== 'running') {
      throw new ConflictError(
        'EGJ_NOT_CANCELLABLE',
        `${found?.file ?? key}: only queued or running jobs can be cancelled (this one is ${found?.state ?? prunedState(readTombstone(store, key)) ?? 'unknown'}${found?.state === 'received' ? '; use genjob drop' : ''})`,
      );
    }
    // a running job's receipt may have landed before a crash kept it from received/: the receipt and
    // outputs go first (give-up.ts), so none of the cancelled attempt is left to be taken for the next's
    const result = setAsideResult(store, key, why);
    const name = deadLetterFile(store, found.file, `${key}.job`, why);
    if (name === null) {
      throw new ConflictError('EGJ_NOT_CANCELLABLE', `${found.file}: the job moved on meanwhile; look again`);
    }
    if (found.state === 'running') store.fs.rmSync(store.layout.lease(key), { force: true });
    journal(store, { event: 'cancelled', key, state: found.state, reason: why.reason });
    return { state: found.state, dead: name, result };
  });
}

/**
 * Finish a cancel a crash interrupted after the job file reached dead/: the lease it had not removed yet,
 * the receipt and outputs a genjob that moved the job file first left in place (moved to dead/ with the
 * cancel's reason), and the journal line it had not written. The cancel is journalled when there was
 * anything to finish. Returns where the
 * receipt and outputs went, or undefined when there was nothing to finish. Call for a key in no state
 * whose newest job file in dead/ was put there by cancel.
 */
export async function finishCancel(store: Store, key: string): Promise<string[] | undefined> {
  return withKeyLock(store, key, () => {
    if (findJob(store, key) !== undefined || !wasCancelled(store, key)) return undefined;
    const lease = exists(store, store.layout.lease(key));
    // the key is in no state: no attempt owns a lease, and its worker stands down once it is gone
    if (lease) store.fs.rmSync(store.layout.lease(key), { force: true });
    const finished = finishGivenUp(store, key, CANCELLED, 'cancelled');
    if (!lease && finished === undefined) return undefined;
    const reason = finished?.why.reason ?? cancelledReason(store, key);
    journal(store, { event: 'cancelled', key, reason, finished: true });
    return finished?.moved ?? [];
  });
}

/** The reason of the key's newest job file in dead/, when cancel put it there. */
function cancelledReason(store: Store, key: string): string | undefined {
  const dead = deadJobOf(store, key);
  const why = dead && deadReason(store, dead.name);
  return why?.code === CANCELLED ? why.reason : undefined;
}

/** Whether the key's newest job file in dead/ was put there by cancel. */
export function wasCancelled(store: Store, key: string): boolean {
  return cancelledReason(store, key) !== undefined;
}
