// Whose turn is it to generate an entry? The entry lock is held for a whole generation by a live
// serve (a dead one's lock is taken over at once, result-cache.ts), and the outbox record
// (started/<name>.json) names the serve that began it by pid and process start. A request that
// finds the lock held waits for that generation, bounded by its own deadline, and is then answered
// from the cache: never a second generation. A record still standing once the lock is ours is either
// abandoned — its serve is gone, and its generator with it (the sandbox ends with serve), so nothing
// can still put a result in the cache: generated again, said on serve's stderr — or in doubt (its
// serve lives on, or cannot be told: another host, an unreadable record; its result may have been
// delivered without being stored): refused, unless the worker consented (`work --retry-aborted`, or
// the `regenerate` of `genjob retry`), since the generator may have spent a model call.
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError } from '../core/errors.js';
import { ownerGone } from '../store/process-identity.js';
import type { ResultCache, StartedRecord } from './result-cache.js';

const POLL_MS = 200;
const CONSENT = 'genjob retry KEY, or genjob work --retry-aborted';

function whom(rec: StartedRecord, gone: boolean): string {
  if (!(rec.pid > 0)) return `at ${rec.started_at}`;
  return `at ${rec.started_at} by serve pid ${rec.pid}${gone ? ', which has since died' : ''}`;
}

function inDoubt(rec: StartedRecord): ConflictError {
  return new ConflictError(
    'EGJ_GENERATION_IN_DOUBT',
    `a generation of this job was started on this host ${whom(rec, false)} and never put a result in the cache; ` +
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

/**
 * Under the entry's lock, with no usable result cached: refuse a generation left in doubt, unless
 * consented. One whose serve is gone was abandoned: it is not refused (the caller clears its record).
 */
export async function refuseInDoubt(cache: ResultCache, name: string, consent: boolean): Promise<void> {
  const rec = await cache.startedRecord(name);
  if (rec === undefined || consent) return;
  if (!ownerGone(rec)) throw inDoubt(rec);
  process.stderr.write(
    `genjob serve: ${name.slice(0, 12)}: a generation started ${whom(rec, true)}, was abandoned (nothing of it can reach the cache); generating again\n`,
  );
}
