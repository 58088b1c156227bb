// Put a minted job into queue/ — or recognise it. Same key + same digest anywhere in the flow
// is "already minted"; same key + another digest is a conflict, never an overwrite.
// The job file is published by exclusive link, so two racing minters cannot both create it; the
// `minted` line follows it. A mint killed between the two left the job queued without its line: the
// same mint again finds the job and no line since the key's life began, and writes it (`finished`).
// Both are done under the key's lock (mintLocked), so a mint still on its way to its line is never
// taken for a killed one: one mint, one line, however many processes race it.
import { canonicalBytes, canonicalJson } from '../core/canonical-json.js';
import { ConflictError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { sha256Hex } from '../core/sha256.js';
import { currentEpoch, markMinted } from './attempts.js';
import { deadJobOf, deadJobs, deadWhy } from './dead-jobs.js';
import { publishExclusive } from './durable.js';
import { findJob, RECORD_STATES, type StoredJob } from './job-states.js';
import { journal, journalledSince, readJournalEvent } from './journal.js';
import type { JournalLine } from './journal-read.js';
import { withKeyLock } from './key-lock.js';
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
  /** Set when this wrote the `minted` line of a mint killed after its job file was published. */
  finished?: true;
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

/** The events that begin a key's life in the queue: mint's, and a retry's from dead/. */
const QUEUED_BY = ['minted', 'retried'];

/**
 * What a mint of many jobs (mint --each) reads once for all of them rather than once a job: every line
 * of QUEUED_BY and the newest job file in dead/ of each key, read when the first job is found there
 * already. Only a line it holds is taken as is: for a job it holds none of, the journal is read again
 * under the job's lock before one is written (another process may have written it since).
 */
export class MintMemo {
  #lines: Map<string, JournalLine[]> | undefined;
  #dead: Map<string, string> | undefined;
  constructor(private readonly store: Store) {}

  lines(key: string): JournalLine[] {
    if (this.#lines === undefined) {
      this.#lines = new Map();
      for (const event of QUEUED_BY)
        for (const line of readJournalEvent(this.store, event)) {
          if (typeof line.key !== 'string') continue;
          const of = this.#lines.get(line.key);
          if (of) of.push(line);
          else this.#lines.set(line.key, [line]);
        }
    }
    return this.#lines.get(key) ?? [];
  }

  deadJob(key: string): string | undefined {
    this.#dead ??= new Map(deadJobs(this.store).map((d) => [d.key, d.name]));
    return this.#dead.get(key);
  }
}

function sameOrConflict(
  store: Store,
  job: Job,
  digest: string,
  memo: MintMemo | undefined,
): MintOutcome | undefined {
  const found = findJob(store, job.key);
  if (!found) return undefined;
  const existing = existingDigest(found.state, found.bytes);
  if (existing !== digest) {
    throw new ConflictError(
      'EGJ_KEY_CONFLICT',
      `${found.file}: key ${job.key.slice(0, 12)} already names a different job (${existing === null ? 'an unreadable file' : `digest ${existing.slice(0, 12)}`}, this one ${digest.slice(0, 12)}); nothing was written`,
    );
  }
  if (!mintUnjournalled(store, found, job.key, memo))
    return { key: job.key, digest, minted: false, state: found.state };
  journalMinted(store, job, digest);
  return { key: job.key, digest, minted: true, state: found.state, finished: true };
}

function journalMinted(store: Store, job: Job, digest: string): void {
  journal(store, { event: 'minted', key: job.key, digest, inputs: job.inputs.length });
}

/**
 * Whether the key's job (its bytes the ones minted) is waiting or being worked without the `minted` line
 * of its mint: a mint killed after it published the job file and before the line. The line is looked for
 * since the key's life began: when the key was given up before, its newest job file in dead/ says when
 * (a life before that one has its own line). A `retried` line counts too: a retry from dead/ queues the
 * job again without a mint. Applied and reverted jobs are left as they are: a give-up copies their job
 * into dead/ before it moves the record, so their dead/ file can be newer than their mint. Call under
 * the key's lock.
 */
function mintUnjournalled(store: Store, found: StoredJob, key: string, memo?: MintMemo): boolean {
  if (RECORD_STATES.has(found.state)) return false;
  if (memo && journalledSince(store, key, QUEUED_BY, lifeBegan(store, memo.deadJob(key)), memo.lines(key)))
    return false;
  const dead = deadJobOf(store, key);
  return !journalledSince(store, key, QUEUED_BY, lifeBegan(store, dead?.name));
}

/** When the key's life began: the time its newest job file in dead/ (`deadName`) went there, '' if none. */
function lifeBegan(store: Store, deadName: string | undefined): string {
  const at = deadName === undefined ? undefined : deadWhy(store, deadName)?.at;
  return typeof at === 'string' ? at : '';
}

/**
 * Mint `job` under its key's lock: what every command that mints does, since another genjob may mint the
 * same job at the same time (mintJob alone is for a store nothing else writes).
 */
export function mintLocked(store: Store, job: Job, memo?: MintMemo): Promise<MintOutcome> {
  return withKeyLock(store, job.key, () => mintJob(store, job, memo));
}

export function mintJob(store: Store, job: Job, memo?: MintMemo): MintOutcome {
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
  const before = sameOrConflict(store, job, digest, memo);
  if (before) return before;
  // the count restarts before the job can be claimed: a crash between the two leaves a mark with no job
  // (minting again marks again), never a queued job counting its earlier life's attempts
  markMinted(store, job.key, newest);
  const created = publishExclusive(store, store.layout.jobFile('queue', job.key), bytes);
  if (!created)
    return (
      sameOrConflict(store, job, digest, memo) ?? { key: job.key, digest, minted: false, state: 'queue' }
    );
  journalMinted(store, job, digest);
  return { key: job.key, digest, minted: true, state: 'queue' };
}
