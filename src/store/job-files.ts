// Loading a job file with its schema checked (zod): what verify, apply and work need.
import { UsageError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { parseJob } from '../core/job-schema.js';
import { readRecord } from './durable.js';
import { RECORD_STATES } from './job-states.js';
import type { JobState } from './layout.js';
import type { Store } from './store.js';

export function loadJob(
  store: Store,
  state: JobState,
  key: string,
): { job: Job; digest: string; bytes: Buffer } {
  const file = store.layout.jobFile(state, key);
  const bytes = readRecord(store, file);
  if (bytes === undefined)
    throw new UsageError('EGJ_NOT_IN_STATE', `${file}: job ${key.slice(0, 12)} is not in ${state}/`);
  return parseJobFile(state, file, bytes);
}

/** A job file's bytes as read from `state`/ (by findJob, say), checked as loadJob does: no second read. */
export function parseJobFile(
  state: JobState,
  file: string,
  bytes: Buffer,
): { job: Job; digest: string; bytes: Buffer } {
  // applied/ and reverted/ hold the apply record, which embeds the job document
  if (RECORD_STATES.has(state)) {
    const record = JSON.parse(bytes.toString('utf8')) as { job: unknown };
    const jobBytes = Buffer.from(JSON.stringify(record.job));
    return { ...parseJob(jobBytes, file), bytes: jobBytes };
  }
  return { ...parseJob(bytes, file), bytes };
}
