// Put a minted job into queue/ — or recognise it. Same key + same digest anywhere in the flow
// is "already minted"; same key + another digest is a conflict, never an overwrite.
// The job file is published by exclusive link, so two racing minters cannot both create it.
import { canonicalBytes, canonicalJson } from '../core/canonical-json.js';
import { ConflictError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { sha256Hex } from '../core/sha256.js';
import { currentEpoch, markMinted } from './attempts.js';
import { publishExclusive } from './durable.js';
import { findJob, RECORD_STATES } from './job-states.js';
import { journal } from './journal.js';
import type { JobState } from './layout.js';
import type { Store } from './store.js';
import { prunedOn, readTombstone, tombstoneFile } from './tombstone.js';

export interface MintOutcome {
  key: string;
  digest: string;
  minted: boolean;
  state: JobState;
  /** Set when the key was applied and its material pruned by gc (the tombstone's date). */
  prunedOn?: string;
}

export function jobFileBytes(job: Job): Buffer {
  return Buffer.from(`${canonicalJson(job)}\n`);
}

/** The job file's bytes and the job's digest (jobDigest) from one canonical serialisation. */
function fileAndDigest(job: Job): { bytes: Buffer; digest: string } {
  const bytes = jobFileBytes(job);
  return { bytes, digest: sha256Hex(bytes.subarray(0, bytes.length - 1)) };
}

/**
 * The digest of the job document already stored under the key (applied/ embeds it in the apply
 * record), or null when unreadable. No schema check is needed to compare: any difference, valid or
 * not, is a different job.
 */
function existingDigest(state: JobState, bytes: Buffer): string | null {
  try {
    const doc = JSON.parse(bytes.toString('utf8')) as { job?: unknown };
    return sha256Hex(canonicalBytes(RECORD_STATES.has(state) ? doc.job : doc));
  } catch {
    return null;
  }
}

function sameOrConflict(store: Store, job: Job, digest: string): MintOutcome | undefined {
  const found = findJob(store, job.key);
  if (!found) return undefined;
  const existing = existingDigest(found.state, found.bytes);
  if (existing !== digest) {
    throw new ConflictError(
      'EGJ_KEY_CONFLICT',
      `${found.file}: key ${job.key.slice(0, 12)} already names a different job (${existing === null ? 'an unreadable file' : `digest ${existing.slice(0, 12)}`}, this one ${digest.slice(0, 12)}); nothing was written`,
    );
  }
  return { key: job.key, digest, minted: false, state: found.state };
}

export function mintJob(store: Store, job: Job): MintOutcome {
  const { bytes, digest } = fileAndDigest(job);
  // an applied key whose material gc pruned is never generated again (store/tombstone.ts)
  const tomb = readTombstone(store, job.key);
  if (tomb?.state === 'applied' && !findJob(store, job.key)) {
    if (tomb.job_digest !== null && tomb.job_digest !== digest) {
      throw new ConflictError(
        'EGJ_KEY_CONFLICT',
        `${tombstoneFile(store, job.key)}: key ${job.key.slice(0, 12)} was applied as a different job (digest ${tomb.job_digest.slice(0, 12)}, this one ${digest.slice(0, 12)}); nothing was written`,
      );
    }
    return { key: job.key, digest, minted: false, state: 'applied', prunedOn: prunedOn(tomb) };
  }
  // the key's newest epoch before anything else: once the job is published a worker may begin an attempt
  const newest = currentEpoch(store, job.key);
  const before = sameOrConflict(store, job, digest);
  if (before) return before;
  // the count restarts before the job can be claimed: a crash between the two leaves a mark with no job
  // (minting again marks again), never a queued job counting its earlier life's attempts
  markMinted(store, job.key, newest);
  const created = publishExclusive(store, store.layout.jobFile('queue', job.key), bytes);
  if (!created)
    return sameOrConflict(store, job, digest) ?? { key: job.key, digest, minted: false, state: 'queue' };
  journal(store, { event: 'minted', key: job.key, digest, inputs: job.inputs.length });
  return { key: job.key, digest, minted: true, state: 'queue' };
}
