import { deadJobOf, deadWhy } from './dead-jobs.js';
import { type DeadReason, deadLetterBytes, deadLetterFile } from './dead-letter.js';
import { exists } from './durable.js';
import { parseJobFile } from './job-files.js';
import { findJob, RECORD_STATES, type StoredJob } from './job-states.js';
import { journalledSince } from './journal.js';
import { jobFileBytes } from './mint-job.js';
import type { Store } from './store.js';

/** Move the key's receipt, then its outputs, to dead/ with `why`. Returns the names they got there. */
export function setAsideResult(store: Store, key: string, why: DeadReason): string[] {
  const names: Array<string | null> = [];
  if (exists(store, store.layout.receipt(key)))
    names.push(deadLetterFile(store, store.layout.receipt(key), `${key}.receipt`, why));
  if (exists(store, store.layout.outDir(key)))
    names.push(deadLetterFile(store, store.layout.outDir(key), `${key}.out`, why));
  return listed(names);
}

/**
 * Move a live job's file to dead/ as `<key>.job`, returning the names it took there. A reverted job's
 * file is its apply record, which embeds the job: the job document itself is published as `<key>.job`
 * (the bytes mint wrote), then the record moves beside it as `<key>.<state>`, so every reader of a dead
 * job file reads a job. A record that holds no valid job moves as `<key>.job`, to be listed as one.
 */
export function deadLetterJob(store: Store, key: string, found: StoredJob, why: DeadReason): string[] {
  if (!RECORD_STATES.has(found.state)) return listed([deadLetterFile(store, found.file, `${key}.job`, why)]);
  let job: Buffer;
  try {
    job = jobFileBytes(parseJobFile(found.state, found.file, found.bytes).job);
  } catch {
    return listed([deadLetterFile(store, found.file, `${key}.job`, why)]);
  }
  // the copy first: a crash before the record moves leaves the job in its state, and the replay moves it
  const copy = deadLetterBytes(store, `${key}.job`, job, why);
  return [copy, ...listed([deadLetterFile(store, found.file, `${key}.${found.state}`, why)])];
}

function listed(names: Array<string | null>): string[] {
  return names.filter((n): n is string => n !== null);
}

/** Whether a receipt or outputs of the key are in place. */
export function hasResult(store: Store, key: string): boolean {
  return exists(store, store.layout.receipt(key)) || exists(store, store.layout.outDir(key));
}

export interface FinishedGiveUp {
  /** The key's newest job file in dead/. */
  job: string;
  /** Its reason, as it was published (without its `at`). */
  why: DeadReason;
  /** Where the receipt and outputs left in place went. */
  moved: string[];
}

/**
 * Finish a give-up a crash interrupted after the job file reached dead/: when the key is in no live
 * state and its newest job file in dead/ has a reason with `code`, move its receipt and outputs still in
 * place to dead/ with that reason. With `event`, a give-up killed after its last move and before its
 * journal line is finished too: nothing to move, but no `event` line of the key since the reason was
 * written. Undefined when there is nothing of the kind to finish; the caller journals `event`. Call under
 * the key's lock.
 */
export function finishGivenUp(
  store: Store,
  key: string,
  code: string,
  event?: string,
): FinishedGiveUp | undefined {
  const left = givenUpUnfinished(store, key, code, event);
  return left && { ...left, moved: setAsideResult(store, key, left.why) };
}

/** What finishGivenUp would finish (the dead job file and its reason), without moving anything. */
export function givenUpUnfinished(
  store: Store,
  key: string,
  code: string,
  event?: string,
): Omit<FinishedGiveUp, 'moved'> | undefined {
  if (findJob(store, key) !== undefined) return undefined;
  const result = hasResult(store, key);
  if (!result && event === undefined) return undefined;
  const dead = deadJobOf(store, key);
  if (dead === undefined) return undefined;
  const { at, ...why } = deadWhy(store, dead.name) ?? {};
  if (why.code !== code || typeof why.reason !== 'string') return undefined;
  // the line comes after the moves, so after the reason's time: one from before is an earlier give-up's
  const since = typeof at === 'string' ? at : '';
  if (!result && journalledSince(store, key, event!, since)) return undefined;
  return { job: dead.name, why: why as DeadReason };
}
