// Claim a job: rename(queue/<key>.json, running/<key>.json).
// rename within one filesystem is atomic, so exactly one worker wins; a loser sees ENOENT
// and moves on. Both directories are fsynced before we report the claim, so a crash never
// shows a job in two states or in none. A claim whose journal line cannot be written is undone.
import { errnoOf } from '../core/errors.js';
import { moveState } from './durable.js';
import { keysIn } from './job-states.js';
import { journal } from './journal.js';
import type { Store } from './store.js';

/** Try to claim `key`; false when another worker got it first. */
export function claim(store: Store, key: string, worker: string): boolean {
  try {
    moveState(store, store.layout.jobFile('queue', key), store.layout.jobFile('running', key));
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false;
    throw err;
  }
  try {
    journal(store, { event: 'claimed', key, worker });
  } catch (err) {
    // a claim that cannot be journalled is undone at once, not left in running/ for a lease TTL
    try {
      moveState(store, store.layout.jobFile('running', key), store.layout.jobFile('queue', key));
      if (err instanceof Error)
        err.message = `${err.message}; job ${key.slice(0, 12)} was put back in queue/`;
    } catch {
      // still in running/ with no lease: the next `genjob work` reaps it once the claim is older than its TTL (two faults in a row)
    }
    throw err;
  }
  return true;
}

/**
 * Claim a queued job not in `skip`; undefined when none could be had. Workers start at a random
 * point of the sorted listing so that racing workers do not all fight over the same first key.
 */
export function claimNext(
  store: Store,
  worker: string,
  skip: ReadonlySet<string> = new Set(),
): string | undefined {
  const keys = keysIn(store, 'queue');
  const start = Math.floor(Math.random() * keys.length);
  for (const key of [...keys.slice(start), ...keys.slice(0, start)]) {
    if (skip.has(key)) continue;
    if (claim(store, key, worker)) return key;
  }
  return undefined;
}
