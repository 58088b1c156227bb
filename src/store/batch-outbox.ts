// The batch outbox: .gen/batches/<run>/record.json says what a batch submission has done so far —
// intent (the jobs and their input JSONL, written before anything leaves), uploaded (the provider's
// file id), submitted (the provider's batch id), done. Each step is recorded durably before the next
// effect, so after a crash the next run resumes it: it never creates a second batch for the same jobs.
import { join } from 'node:path';
import { publishExclusive, readdirOrEmpty, readIfExists, replaceFile } from './durable.js';
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
  replaceFile(store, recordPath(store, rec.run), bytesOf(rec));
}

export function readRecord(store: Store, run: string): BatchRecord | undefined {
  const bytes = readIfExists(store, recordPath(store, run));
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8')) as BatchRecord;
  } catch {
    return undefined;
  }
}

/** Every record, oldest run first (run ids start with a timestamp). */
export function allRecords(store: Store): BatchRecord[] {
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
