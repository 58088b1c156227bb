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
 * The queued keys in mint order, oldest first: by the job file's mtime, which mint sets when it publishes
 * the file and every later move (claim, requeue, reap: a rename) keeps; ties by key. A stat per queued job,
 * once per listing, so a run of many jobs is claimed in the order they were minted.
 */
export function queueInMintOrder(store: Store): string[] {
  const minted = new Map<string, number>();
  for (const key of keysIn(store, 'queue')) {
    try {
      minted.set(key, store.fs.statSync(store.layout.jobFile('queue', key)).mtimeMs);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err; // claimed by another worker since the listing
    }
  }
  // keysIn lists keys sorted and Array.prototype.sort is stable: jobs of one tick stay in key order
  return [...minted.keys()].sort((a, b) => minted.get(a)! - minted.get(b)!);
}

/** Claim the oldest queued job not in `skip`; undefined when none could be had. */
export function claimNext(
  store: Store,
  worker: string,
  skip: ReadonlySet<string> = new Set(),
): string | undefined {
  for (const key of queueInMintOrder(store)) {
    if (skip.has(key)) continue;
    if (claim(store, key, worker)) return key;
  }
  return undefined;
}

/**
 * Claims for a whole run at a cost independent of the number of jobs claimed (maildir style): the queue
 * is listed once into a batch in mint order, oldest first, and listed again only when the batch is used
 * up — never once per job. A claim that fails (another worker took that job) moves on to the next oldest:
 * racing workers each take the oldest job still there, at the cost of a failed rename for the losers.
 * Keys `accept` declines (a job in doubt on another host) stay in the batch for a later call.
 */
export class Claimer {
  /** The batch, newest first (the next key to try is the last). */
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
    // a claim lost since the last listing: other workers are taking jobs, so a new listing may hold more
    // Stryker disable next-line BooleanLiteral: read only after a listing, which sets it to false
    let raced = false;
    for (;;) {
      // an empty batch (a first call, or one the loop below gave up on) is listed anew; an empty
      // listing falls through the claim loop to the `listed && !raced` return below
      if (this.batch.length === 0) {
        this.batch = queueInMintOrder(this.store).reverse();
        this.listings += 1;
        listed = true;
        raced = false;
      }
      const declined: string[] = [];
      let claimed: string | undefined;
      while (this.batch.length > 0 && claimed === undefined) {
        const key = this.batch.pop()!;
        if (!accept(key)) declined.push(key);
        else if (claim(this.store, key, this.worker)) claimed = key;
        else raced = true;
      }
      // declined keys go back in their order, to be offered first next time
      this.batch.push(...declined.reverse());
      if (claimed !== undefined) return claimed;
      // only declined keys are left: look (once, or again after a lost race) for new ones
      if (listed && !raced) return undefined;
      this.batch = [];
    }
  }
}
