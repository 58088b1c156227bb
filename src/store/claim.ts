// Claim a job: rename(queue/<key>.json, running/<key>.json).
// rename within one filesystem is atomic, so exactly one worker wins; a loser sees ENOENT
// and moves on. Both directories are fsynced before we report the claim, so a crash never
// shows a job in two states or in none. A claim that fails after its rename (a directory fsync,
// the journal line) is undone at once, so the job never waits in running/ for a lease TTL.
import { errnoOf } from '../core/errors.js';
import { exists, moveState } from './durable.js';
import { keysIn } from './job-states.js';
import { journal } from './journal.js';
import type { Store } from './store.js';

/** Try to claim `key`; false when another worker got it first. */
export function claim(store: Store, key: string, worker: string): boolean {
  try {
    moveState(store, store.layout.jobFile('queue', key), store.layout.jobFile('running', key));
    journal(store, { event: 'claimed', key, worker });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false;
    undoClaim(store, key, err);
    throw err;
  }
  return true;
}

function undoClaim(store: Store, key: string, err: unknown): void {
  let note: string;
  try {
    if (!exists(store, store.layout.jobFile('running', key))) return;
    moveState(store, store.layout.jobFile('running', key), store.layout.jobFile('queue', key));
    note = `job ${key.slice(0, 12)} was put back in queue/`;
  } catch {
    // two failures in a row: running/ with no lease is reaped once the claim is older than the TTL
    note = `job ${key.slice(0, 12)} is left in running/ without a lease; \`genjob reap\` returns it after the lease TTL`;
  }
  if (err instanceof Error) err.message = `${err.message}; ${note}`;
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
