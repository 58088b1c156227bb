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

/**
 * Claims for a whole run at a cost independent of the queue's depth (maildir style): the queue is
 * listed once into a shuffled batch, and listed again only when the batch is used up or a claim
 * fails (another worker got there first, so the listing is out of date) — never once per job.
 * Keys `accept` declines (a job in doubt on another host) stay in the batch for a later call.
 */
export class Claimer {
  private batch: string[] = [];
  /** How many times the queue directory was listed (for tests and the bench). */
  listings = 0;

  /** Keys of the current batch that were declined; after next() found nothing, jobs held back. */
  get held(): number {
    return this.batch.length;
  }

  constructor(
    private readonly store: Store,
    private readonly worker: string,
  ) {}

  next(accept: (key: string) => boolean = () => true): string | undefined {
    let listed = false;
    let stale = false;
    for (;;) {
      // Stryker disable next-line ConditionalExpression: an empty batch that is not stale gets listed anyway by the `stale = true` below
      if (this.batch.length === 0 || stale) {
        // Stryker disable next-line ConditionalExpression: unreachable as true (a later pass of the loop always has stale set), kept as a guard
        if (listed && !stale) return undefined;
        this.batch = shuffle(keysIn(this.store, 'queue'));
        this.listings += 1;
        listed = true;
        stale = false;
        // Stryker disable next-line ConditionalExpression: as false, an empty listing returns undefined below (`if (listed)`) all the same
        if (this.batch.length === 0) return undefined;
      }
      const declined: string[] = [];
      let claimed: string | undefined;
      while (this.batch.length > 0 && claimed === undefined && !stale) {
        const key = this.batch.pop()!;
        if (!accept(key)) declined.push(key);
        else if (claim(this.store, key, this.worker)) claimed = key;
        else stale = true;
      }
      // Stryker disable next-line MethodExpression: the batch is a uniform shuffle; any fixed order of the declined keys keeps it one
      this.batch.push(...declined.reverse());
      if (claimed !== undefined) return claimed;
      if (!stale) {
        // only declined keys are left: look once for new ones, else report nothing claimable
        if (listed) return undefined;
        stale = true;
      }
    }
  }
}

function shuffle<T>(items: T[]): T[] {
  // Stryker disable next-line EqualityOperator: `i >= 0` adds a swap of items[0] with itself
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
