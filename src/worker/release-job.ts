// Give a job back — to queue/ (in doubt: try again) or to dead/ (with the reason) — only while
// this attempt's epoch still owns it. The check runs under the key lock, because after a reap
// another worker may hold running/<key>.json by now, and moving its claim would lose its work.
// giveBack() is the one exit for a worker stopped by an error after its claim: every such path ends here.
import { errnoOf, GenjobError } from '../core/errors.js';
import { currentEpoch, markUnspent } from '../store/attempts.js';
import { deadLetterFile } from '../store/dead-letter.js';
import { moveState } from '../store/durable.js';
import { journal } from '../store/journal.js';
import { withKeyLock } from '../store/key-lock.js';
import { moveWithoutLease, readLease } from '../store/lease.js';
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
    const lease = readLease(store, key);
    if (lease?.epoch !== epoch || currentEpoch(store, key) !== epoch) return false;
    const running = store.layout.jobFile('running', key);
    // our lease goes before the job leaves running/: back in queue/, the next claim's lease is not ours
    moveWithoutLease(store, key, lease, () => {
      if (to === 'dead') deadLetterFile(store, running, `${key}.job`, { key, ...why });
      else {
        try {
          moveState(store, running, store.layout.jobFile('queue', key));
        } catch (err) {
          if (errnoOf(err) !== 'ENOENT') throw err;
        }
      }
    });
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

export interface GiveBack {
  /** The attempt this worker recorded; undefined when the error came between the claim and the attempt. */
  epoch?: number;
  /** false: this attempt does not count against --max-attempts (nothing reached the host). Default true. */
  spendAttempt?: boolean;
}

/**
 * A worker that claimed `key` was stopped by `err`: put the job back in queue/ at once (never leave it
 * to wait for a lease TTL), journal it, and return the sentence to add to the error's message. When even
 * that fails (the disk is gone), the job stays in running/ under a lease naming this process, and the next
 * `work` on this host takes it back at once because this process is gone (reap.ts).
 */
export async function giveBack(
  store: Store,
  key: string,
  err: unknown,
  opts: GiveBack = {},
): Promise<string> {
  const code = err instanceof GenjobError ? err.code : 'EGJ_WORKER_FAILED';
  const reason = `the worker stopped: ${(err as Error)?.message ?? String(err)}`;
  const k = key.slice(0, 12);
  try {
    if (opts.epoch === undefined) {
      // claimed, no attempt recorded yet: nobody else can own running/<key>.json, so move it straight back
      moveState(store, store.layout.jobFile('running', key), store.layout.jobFile('queue', key));
    } else {
      if (opts.spendAttempt === false) markUnspent(store, key, opts.epoch);
      if (!(await release(store, key, opts.epoch, 'queue', { code, reason })))
        return `job ${k} was taken over by a newer attempt`;
    }
  } catch (failed) {
    if (errnoOf(failed) === 'ENOENT') return `job ${k} had already left running/`;
    return `job ${k} could not be put back (${(failed as Error).message}); the next \`genjob work\` takes it back at once`;
  }
  try {
    journal(store, {
      event: 'requeued',
      key,
      ...(opts.epoch === undefined ? {} : { epoch: opts.epoch }),
      code,
      reason,
      ...(opts.spendAttempt === false ? { spend_attempt: false } : {}),
    });
  } catch {
    return `job ${k} was put back in queue/ (the journal could not record it)`;
  }
  return `job ${k} was put back in queue/`;
}
