// Whose turn is it to generate an entry? The entry lock is held for a whole generation by a live
// serve (a dead one's lock is taken over at once, result-cache.ts), and the outbox record
// (started/<name>.json) names the serve that began it by pid and process start. A request that
// finds the lock held waits for that generation, bounded by its own deadline, and is then answered
// from the cache: never a second generation. A record still standing once the lock is ours means the
// generation is in doubt (its serve died, or its result could not be stored; the generator may have
// run and spent a model call): refused, unless the worker consented to a new run (`work --retry-aborted`).
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError } from '../core/errors.js';
import { ownerGone } from '../store/process-identity.js';
import type { ResultCache, StartedRecord } from './result-cache.js';

const POLL_MS = 200;
const CONSENT = 'genjob work --retry-aborted';

function whom(rec: StartedRecord, gone: boolean): string {
  if (!(rec.pid > 0)) return `at ${rec.started_at}`;
  return `at ${rec.started_at} by serve pid ${rec.pid}${gone ? ', which has since died' : ''}`;
}

function inDoubt(rec: StartedRecord, gone: boolean): ConflictError {
  return new ConflictError(
    'EGJ_GENERATION_IN_DOUBT',
    `a generation of this job was started on this host ${whom(rec, gone)} and never put a result in the cache; ` +
      `the generator may have run, so it is not run again without consent (${CONSENT})`,
  );
}

/**
 * The entry's lock, once no other serve is generating it. Waits while a live serve holds it, until
 * `deadline` (ms since the epoch): then EGJ_GENERATION_RUNNING.
 */
export async function takeTurn(
  cache: ResultCache,
  name: string,
  deadline: number,
): Promise<() => Promise<void>> {
  for (;;) {
    const release = await cache.tryLock(name);
    if (release) return release;
    const left = deadline - Date.now();
    if (left <= 0) {
      const rec = await cache.startedRecord(name);
      throw new ConflictError(
        'EGJ_GENERATION_RUNNING',
        `a generation of this job is running on this host${rec ? ` (started ${whom(rec, false)})` : ''} and did not ` +
          `finish within this request's deadline; the job goes back, and a later attempt gets its result from the cache`,
      );
    }
    await sleep(Math.min(POLL_MS, left));
  }
}

/** Under the entry's lock, with no usable result cached: refuse a generation left in doubt, unless consented. */
export async function refuseInDoubt(cache: ResultCache, name: string, consent: boolean): Promise<void> {
  const rec = await cache.startedRecord(name);
  if (rec && !consent) throw inDoubt(rec, ownerGone(rec));
}
