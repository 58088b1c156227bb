// The batch outbox: .gen/batches/<run>/record.json says what a batch submission has done so far —
// intent (the jobs and their input JSONL, written before anything leaves), uploaded (the provider's
// file id), submitted (the provider's batch id), done. Each step is recorded durably before the next
// effect, so after a crash the next run resumes it: it never creates a second batch for the same jobs.
// An intent carries the user's seal (intent_seal): one committed on a branch is never uploaded.
import { join } from 'node:path';
import { canonicalJson } from '../core/canonical-json.js';
import { macHolds, macOf } from '../core/mac.js';
import { SHA256_HEX, sha256Hex } from '../core/sha256.js';
import { publishExclusive, readdirOrEmpty, readIfExists, replaceFile } from './durable.js';
import { assertRealDirs } from './real-dirs.js';
import type { Store } from './store.js';

export type OutboxState = 'intent' | 'uploaded' | 'submitted' | 'done';

export interface BatchJobEntry {
  key: string;
  epoch: number;
  job_digest: string;
  /** How the answer is to be read: structured output or the text blocks. */
  format: 'structured' | 'text';
}

export interface BatchRecord {
  /** The genjob run id, sent as the batch's metadata `genjob_run`. */
  run: string;
  state: OutboxState;
  created_at: string;
  jobs: BatchJobEntry[];
  file_id: string | null;
  batch_id: string | null;
  /** The provider's status as last seen (validating, in_progress, completed, expired...). */
  provider_status: string | null;
  /**
   * The user's seal over the jobs and input.jsonl: only an intent this user's `work --batch` recorded
   * is uploaded (a branch can commit a record, whose input would be sent under the user's API key).
   */
  intent_seal?: string;
}

/** What an intent's seal covers besides its run: this kind of record, so the secret's other uses never collide. */
// Stryker disable next-line StringLiteral: a domain only has to differ from the secret's other uses, each a literal of its own
const INTENT_DOMAIN = 'genjob-batch-intent-v1';

const intentText = (jobs: readonly BatchJobEntry[], jsonl: Uint8Array) =>
  canonicalJson({ jobs, input_sha256: sha256Hex(jsonl) });

/** The seal of run `run`'s intent to send `jobs` as `jsonl`, under the user's `secret`. */
export function sealIntent(
  secret: Buffer,
  run: string,
  jobs: readonly BatchJobEntry[],
  jsonl: Uint8Array,
): string {
  return macOf(secret, INTENT_DOMAIN, run, intentText(jobs, jsonl));
}

/**
 * Whether `rec` (as readRecord gives it, or as submit builds it) carries the user's seal over its jobs
 * and `jsonl` (no secret: none holds).
 */
export function intentHolds(secret: Buffer | null, rec: BatchRecord, jsonl: Uint8Array): boolean {
  return (
    secret !== null &&
    rec.intent_seal !== undefined &&
    macHolds(secret, INTENT_DOMAIN, rec.run, intentText(rec.jobs, jsonl), rec.intent_seal)
  );
}

export function batchesDir(store: Store): string {
  return store.layout.dir('batches');
}

export function runDir(store: Store, run: string): string {
  return join(batchesDir(store), run);
}

export function recordPath(store: Store, run: string): string {
  return join(runDir(store, run), 'record.json');
}

/**
 * The run's directory, or `sub` below it, made if missing, to write into: each a real directory, never a
 * link, checked before anything is made. A new run's id is random, but a poll carries forward every run
 * listed in batches/, whose names a branch chooses when it commits one: `.gen/batches/<run>` (or its
 * `raw/`) as a link had the poll write its record, result files and raw answers wherever it pointed.
 */
export function runDirToWrite(store: Store, run: string, sub: readonly string[] = []): string {
  const dirs = [runDir(store, run)];
  for (const name of sub) dirs.push(join(dirs.at(-1)!, name));
  assertRealDirs(store, dirs, 'genjob', 'writes');
  const dir = dirs.at(-1)!;
  store.fs.mkdirSync(dir, { recursive: true });
  return dir;
}

const bytesOf = (rec: BatchRecord) => Buffer.from(`${JSON.stringify(rec, null, 2)}\n`);

/** Write the JSONL input, then the record (intent): the record is the commit point of the intent. */
export function recordIntent(store: Store, rec: BatchRecord, jsonl: Buffer): void {
  store.fs.mkdirSync(runDir(store, rec.run), { recursive: true });
  replaceFile(store, join(runDir(store, rec.run), 'input.jsonl'), jsonl);
  if (!publishExclusive(store, recordPath(store, rec.run), bytesOf(rec)))
    throw new Error(`batch run ${rec.run} already has a record`); // run ids are random: a bug
}

/** Replace the record with its next state (rename over it, directory fsynced). */
export function updateRecord(store: Store, rec: BatchRecord): void {
  replaceFile(store, join(runDirToWrite(store, rec.run), 'record.json'), bytesOf(rec));
}

const STATES: ReadonlySet<unknown> = new Set<OutboxState>(['intent', 'uploaded', 'submitted', 'done']);
const FORMATS: ReadonlySet<unknown> = new Set<BatchJobEntry['format']>(['structured', 'text']);
const stringOrNull = (v: unknown) => v === null || typeof v === 'string';

/**
 * Whether `v` is a record of run `run` in the shape genjob writes: every key a job key (64 hex digits,
 * never a path), every epoch a positive integer. A record of any other shape (torn, or forged on a
 * branch: its keys name files to write) is no record.
 */
function isBatchRecord(v: unknown, run: string): v is BatchRecord {
  const r = v as Partial<BatchRecord> | null;
  return (
    r !== null &&
    r.run === run &&
    STATES.has(r.state) &&
    typeof r.created_at === 'string' &&
    Array.isArray(r.jobs) &&
    r.jobs.every(
      (j: Partial<BatchJobEntry> | null) =>
        j !== null &&
        typeof j.key === 'string' &&
        SHA256_HEX.test(j.key) &&
        Number.isSafeInteger(j.epoch) &&
        (j.epoch as number) >= 1 &&
        typeof j.job_digest === 'string' &&
        FORMATS.has(j.format),
    ) &&
    stringOrNull(r.file_id) &&
    stringOrNull(r.batch_id) &&
    stringOrNull(r.provider_status) &&
    (r.intent_seal === undefined || typeof r.intent_seal === 'string')
  );
}

export function readRecord(store: Store, run: string): BatchRecord | undefined {
  const bytes = readIfExists(store, recordPath(store, run));
  if (bytes === undefined) return undefined;
  try {
    const rec: unknown = JSON.parse(bytes.toString('utf8'));
    return isBatchRecord(rec, run) ? rec : undefined;
  } catch /* Stryker disable next-line BlockStatement: an emptied catch block returns undefined all the same */ {
    return undefined;
  }
}

/** Every record, oldest run first (run ids start with a timestamp). */
export function allRecords(store: Store): BatchRecord[] {
  // Stryker disable next-line MethodExpression: libuv lists a directory sorted already; the sort says the order is relied on
  return readdirOrEmpty(store, batchesDir(store))
    .sort()
    .map((run) => readRecord(store, run))
    .filter((r): r is BatchRecord => r !== undefined);
}

export function openRecords(store: Store): BatchRecord[] {
  return allRecords(store).filter((r) => r.state !== 'done');
}

/** Keys held by an open batch, with the epoch they were submitted under: not a dead worker's. */
export function batchHeldKeys(store: Store): Map<string, number> {
  const held = new Map<string, number>();
  for (const rec of openRecords(store)) for (const j of rec.jobs) held.set(j.key, j.epoch);
  return held;
}
