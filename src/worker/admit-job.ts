// Before a claimed job gets an attempt: parse running/<key>.json (malformed → dead/; a read that
// fails on the disk → EGJ_IO, the job put back by the caller), finish a move a
// crash interrupted (its current attempt's receipt had landed → received/; a given-up attempt's → dead/),
// and stop at --max-attempts (→ dead/); then
// record the attempt (its epoch and lease) and journal it. Shared by the interactive worker and the batch
// submitter, so both admit a job and begin its attempt by the same rules.
import { GenjobError, IoError } from '../core/errors.js';
import { type Job, JobInvalidError } from '../core/job.js';
import { parseJob } from '../core/job-schema.js';
import { peekEpoch, peekReceipt } from '../core/receipt-peek.js';
import {
  attemptsSinceMint,
  beginAttempt,
  currentEpoch,
  type LeaseRecord,
  mintedAfter,
  type Worker,
} from '../store/attempts.js';
import { deadLetterFile } from '../store/dead-letter.js';
import { exists, moveState, readRecord } from '../store/durable.js';
import { journal } from '../store/journal.js';
import { retriedAfter } from '../store/retry-job.js';
import type { Store } from '../store/store.js';
import type { JobOutcome } from './work-one.js';

export type Admitted = { job: Job; digest: string } | JobOutcome;

export interface AttemptTerms {
  worker: Worker;
  leaseTtlS: number;
  maxAttempts: number;
}

/**
 * Admit a claimed job (admitClaimed) and begin its attempt: the epoch record and lease, then the journal's
 * `attempt` line naming `destination`. `started.epoch` is set as soon as the lease exists, so a caller that
 * fails after it gives back this attempt's lease.
 */
export function startAttempt(
  store: Store,
  key: string,
  terms: AttemptTerms,
  destination: string,
  started: { epoch?: number },
): { job: Job; digest: string; lease: LeaseRecord } | JobOutcome {
  const admitted = admitClaimed(store, key, terms.maxAttempts);
  if ('outcome' in admitted) return admitted;
  const lease = beginAttempt(store, key, terms.worker, terms.leaseTtlS, destination);
  started.epoch = lease.epoch;
  journal(store, { event: 'attempt', key, epoch: lease.epoch, worker: terms.worker.id, destination });
  return { ...admitted, lease };
}

export function admitClaimed(store: Store, key: string, maxAttempts: number): Admitted {
  const runningFile = store.layout.jobFile('running', key);
  let job: Job;
  let digest: string;
  try {
    // a directory, FIFO or symlink claimed as <key>.json fails here (RecordUnreadableError) and goes to dead/
    const bytes = readRecord(store, runningFile);
    if (bytes === undefined)
      return { key, outcome: 'superseded', reason: 'job vanished from running/ after the claim' };
    ({ job, digest } = parseJob(bytes, `running/${key}.json`));
    if (job.key !== key)
      throw new JobInvalidError(`running/${key}.json`, `file name does not match its key ${job.key}`);
  } catch (err) {
    // a disk that fails while the file is read is not the job's fault: the caller puts the job back
    if (!(err instanceof GenjobError) || err instanceof IoError) throw err;
    deadLetterFile(store, runningFile, `${key}.job`, { key, code: err.code, reason: err.message });
    return { key, outcome: 'dead', reason: err.message };
  }

  if (receiptAlreadyLanded(store, key, digest)) {
    moveState(store, runningFile, store.layout.jobFile('received', key));
    journal(store, {
      event: 'recovered',
      key,
      reason: 'receipt had landed before a crash; job moved to received/',
    });
    return { key, outcome: 'recovered' };
  }
  const tries = attemptsSinceMint(store, key);
  if (tries >= maxAttempts) {
    const reason = `no usable answer after ${tries} attempts (see the journal for each)`;
    deadLetterFile(store, runningFile, `${key}.job`, { key, code: 'EGJ_ATTEMPTS_EXHAUSTED', reason });
    return { key, outcome: 'dead', reason };
  }
  return { job, digest };
}

/**
 * A receipt and its outputs landed for the key's current attempt, but a crash kept the job from moving to
 * received/. The receipt is that attempt's only when it is of this job (its digest), of the newest epoch
 * recorded (nothing was attempted since: this runs before the next attempt begins) and of an epoch after
 * the one the key was last minted afresh or retried at. A receipt of an attempt given up (dropped,
 * cancelled, retried or superseded, which a crash left in place) is never taken for it: it and the outputs
 * beside it go to dead/, and the job is generated again.
 */
function receiptAlreadyLanded(store: Store, key: string, digest: string): boolean {
  const receipt = readRecord(store, store.layout.receipt(key));
  if (receipt === undefined || !exists(store, store.layout.outDir(key))) return false;
  const payload = peekReceipt(receipt).payload;
  const epoch = peekEpoch(receipt);
  const newest = currentEpoch(store, key);
  const givenUpAt = Math.max(mintedAfter(store, key), retriedAfter(store, key) ?? 0);
  if (epoch > 0 && epoch === newest && epoch > givenUpAt && payload?.job_digest === digest) return true;
  const why = {
    key,
    code: 'EGJ_EPOCH_SUPERSEDED',
    reason: `receipt of epoch ${epoch} found when the job was claimed is not its current attempt's (${staleBecause(epoch, newest, givenUpAt, payload?.job_digest === digest)}); the job is generated again`,
    epoch,
  };
  deadLetterFile(store, store.layout.receipt(key), `${key}.receipt.e${epoch}`, why);
  deadLetterFile(store, store.layout.outDir(key), `${key}.out`, why);
  return false;
}

function staleBecause(epoch: number, newest: number, givenUpAt: number, sameJob: boolean): string {
  if (!sameJob) return 'it is of another job digest';
  if (epoch !== newest) return `the newest epoch is ${newest}`;
  if (epoch <= givenUpAt) return `the key was minted again or retried after epoch ${givenUpAt}`;
  return 'it names no epoch';
}
