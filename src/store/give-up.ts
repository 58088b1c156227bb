import { deadJobs, deadWhy } from './dead-jobs.js';
import { type DeadReason, deadLetterBytes, deadLetterFile } from './dead-letter.js';
import { exists } from './durable.js';
import { parseJobFile } from './job-files.js';
import { findJob, RECORD_STATES, type StoredJob } from './job-states.js';
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
 * state, its newest job file in dead/ has a reason with `code`, and its receipt or outputs are still in
 * place, move them to dead/ with that reason. Undefined when there is nothing of the kind to finish.
 * Call under the key's lock.
 */
export function finishGivenUp(store: Store, key: string, code: string): FinishedGiveUp | undefined {
  if (findJob(store, key) !== undefined || !hasResult(store, key)) return undefined;
  const dead = deadJobs(store).find((d) => d.key === key);
  if (dead === undefined) return undefined;
  const why = reasonOf(store, dead.name);
  if (why?.code !== code) return undefined;
  return { job: dead.name, why, moved: setAsideResult(store, key, why) };
}

/** The whole reason published beside a dead item, without its `at`, or undefined when unreadable. */
function reasonOf(store: Store, name: string): DeadReason | undefined {
  const { at: _at, ...why } = deadWhy(store, name) ?? {};
  return typeof why.code === 'string' && typeof why.reason === 'string' ? (why as DeadReason) : undefined;
}
