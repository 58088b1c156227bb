// Give a job back — to queue/ (in doubt: try again) or to dead/ (with the reason) — only while
// this attempt's epoch still owns it. The check runs under the key lock, because after a reap
// another worker may hold running/<key>.json by now, and moving its claim would lose its work.
import { currentEpoch, markUnspent } from '../store/attempts.js';
import { deadLetterFile } from '../store/dead-letter.js';
import { moveState } from '../store/durable.js';
import { journal } from '../store/journal.js';
import { withKeyLock } from '../store/key-lock.js';
import { readLease, removeLease } from '../store/lease.js';
import type { Store } from '../store/store.js';
import type { JobOutcome } from './work-one.js';

/**
 * Give the job back (to queue/, or to dead/ with a reason) — but only while our epoch still owns
 * it, checked under the key lock: after a reap another worker may hold running/<key>.json now.
 */
export async function release(
  store: Store,
  key: string,
  epoch: number,
  to: 'queue' | 'dead',
  why: { code: string; reason: string },
): Promise<boolean> {
  return withKeyLock(store, key, () => {
    if (readLease(store, key)?.epoch !== epoch || currentEpoch(store, key) !== epoch) return false;
    const running = store.layout.jobFile('running', key);
    if (to === 'dead') deadLetterFile(store, running, `${key}.job`, { key, ...why });
    else {
      try {
        moveState(store, running, store.layout.jobFile('queue', key));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    removeLease(store, key, epoch);
    return true;
  });
}

/**
 * How a requeue counts: `spent: false` when the bundle never reached a generator (connect, hello,
 * refusal, shutdown), so the attempt does not count against --max-attempts; `destination` is where
 * the attempt went, journalled with it.
 */
export interface RequeueFacts {
  spent?: boolean;
  destination?: string;
}

export async function requeue(
  store: Store,
  key: string,
  epoch: number,
  reason: string,
  code: string,
  facts: RequeueFacts = {},
): Promise<JobOutcome> {
  const spent = facts.spent !== false;
  // marked before the job is visible in queue/ again, so the next claimer already counts it right
  if (!spent) markUnspent(store, key, epoch);
  if (!(await release(store, key, epoch, 'queue', { code, reason }))) {
    return {
      key,
      outcome: 'superseded',
      reason: `lease of epoch ${epoch} was lost before the job could be requeued`,
    };
  }
  journal(store, {
    event: 'requeued',
    key,
    epoch,
    code,
    reason,
    attempt_spent: spent,
    ...(facts.destination === undefined ? {} : { destination: facts.destination }),
  });
  return { key, outcome: 'requeued', reason, attempt_spent: spent };
}
