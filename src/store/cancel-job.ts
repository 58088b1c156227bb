// Cancel a queued or running job: under the key lock its file moves to dead/ with code
// EGJ_CANCELLED (a rename: the job is in its state or in dead/, never both) and a running job's
// lease is removed. Its worker sees the lease gone at its next heartbeat, asks the host on its
// session to kill the generator, and stands down; nothing it brings back is ever committed.
import { ConflictError } from '../core/errors.js';
import { CANCELLED, deadJobs, deadReason } from './dead-jobs.js';
import { deadLetterFile } from './dead-letter.js';
import { findJob } from './job-states.js';
import { journal } from './journal.js';
import { withKeyLock } from './key-lock.js';
import type { Store } from './store.js';
import { prunedState, readTombstone } from './tombstone.js';

export async function cancelJob(
  store: Store,
  key: string,
  reason?: string,
): Promise<{ state: 'queue' | 'running'; dead: string }> {
  const why = { key, code: CANCELLED, reason: `cancelled by the user${reason ? `: ${reason}` : ''}` };
  return withKeyLock(store, key, () => {
    const found = findJob(store, key);
    if (found?.state !== 'queue' && found?.state !== 'running') {
      throw new ConflictError(
        'EGJ_NOT_CANCELLABLE',
        `${found?.file ?? key}: only queued or running jobs can be cancelled (this one is ${found?.state ?? prunedState(readTombstone(store, key)) ?? 'unknown'}${found?.state === 'received' ? '; use genjob drop' : ''})`,
      );
    }
    const name = deadLetterFile(store, found.file, `${key}.job`, why);
    if (name === null) {
      throw new ConflictError('EGJ_NOT_CANCELLABLE', `${found.file}: the job moved on meanwhile; look again`);
    }
    if (found.state === 'running') store.fs.rmSync(store.layout.lease(key), { force: true });
    journal(store, { event: 'cancelled', key, state: found.state, reason: why.reason });
    return { state: found.state, dead: name };
  });
}

/** Whether the key's newest job file in dead/ was put there by cancel. */
export function wasCancelled(store: Store, key: string): boolean {
  const dead = deadJobs(store).find((d) => d.key === key);
  return dead !== undefined && deadReason(store, dead.name)?.code === CANCELLED;
}
