// Carry a batch record forward through the provider's two effects, recording each before the next:
// intent → upload the JSONL → record the file id → create the batch → record the batch id. A record
// found in `uploaded` after a crash may already have a batch (created, then the process died before
// the id was written): the recent batches are listed and one whose metadata names the run is taken
// instead of creating another, so a job key is never submitted twice.
import { join } from 'node:path';
import { IoError, RejectedError } from '../core/errors.js';
import { createBatch, findBatchOfRun, uploadBatchInput } from '../remote/generators/openai-batch-api.js';
import { type BatchRecord, intentHolds, recordPath, runDir, updateRecord } from '../store/batch-outbox.js';
import { readIfExists, replaceFile } from '../store/durable.js';
import { journal } from '../store/journal.js';
import { type HeldLock, lockNamed } from '../store/key-lock.js';
import { beat, readLease } from '../store/lease.js';
import type { Store } from '../store/store.js';
import type { BatchContext } from './batch-context.js';

/** The provider's cap on a batch input file (OpenAI: 200 MB). */
const MAX_BATCH_INPUT_BYTES = 200 * 1024 * 1024;

/**
 * A recorded intent without this user's seal over its jobs and input: its input is never uploaded (a
 * branch can commit one, and the upload is made under the user's API key), and the intent is ended.
 */
export class UnsealedIntentError extends RejectedError {
  constructor(file: string) {
    super(
      'EGJ_BATCH_NOT_SEALED',
      `${file}: this batch intent is not sealed by this user's genjob (committed on a branch, copied, recorded by another user or by an older genjob), so its input is never sent`,
      file,
    );
  }
}

/** Advance `rec` until it is submitted; throws BatchApiError with the step left for the next run. */
export async function sendRecord(ctx: BatchContext, rec: BatchRecord): Promise<BatchRecord> {
  const { store, config } = ctx;
  let uploadedNow = false;
  if (rec.state === 'intent') {
    const input = join(runDir(store, rec.run), 'input.jsonl');
    // read as a record (no link followed: its bytes leave for the provider), up to the provider's file cap
    const jsonl = readIfExists(store, input, MAX_BATCH_INPUT_BYTES);
    if (jsonl === undefined) throw IoError.gone('read', input);
    if (!intentHolds(ctx.userSecret, rec, jsonl)) throw new UnsealedIntentError(recordPath(store, rec.run));
    const fileId = await uploadBatchInput(config, `genjob-${rec.run}.jsonl`, jsonl);
    rec = { ...rec, state: 'uploaded', file_id: fileId };
    updateRecord(store, rec);
    journal(store, { event: 'batch-uploaded', run: rec.run, file_id: fileId, jobs: rec.jobs.length });
    uploadedNow = true;
  }
  if (rec.state === 'uploaded') {
    // only a record this process did not just upload can have a batch it does not know of
    const found = uploadedNow ? undefined : await findBatchOfRun(config, rec.run);
    const batch = found ?? (await createBatch(config, rec.file_id!, rec.run));
    rec = { ...rec, state: 'submitted', batch_id: batch.id, provider_status: batch.status };
    updateRecord(store, rec);
    journal(store, {
      event: 'batch-submitted',
      run: rec.run,
      batch: batch.id,
      jobs: rec.jobs.length,
      ...(found ? { found_by_metadata: true } : {}),
    });
  }
  if (rec.state === 'submitted') keepLeases(ctx, rec);
  return rec;
}

/** Beat each job's lease and make it name the batch (once its id is known). */
export function keepLeases(ctx: BatchContext, rec: BatchRecord): void {
  const { store } = ctx;
  for (const j of rec.jobs) {
    const lease = readLease(store, j.key);
    if (lease?.epoch !== j.epoch) continue;
    if (rec.batch_id !== null && lease.batch !== rec.batch_id) {
      const named = { ...lease, batch: rec.batch_id, destination: `batch ${rec.batch_id}` };
      replaceFile(store, store.layout.lease(j.key), Buffer.from(`${JSON.stringify(named)}\n`));
    } else {
      beat(store, j.key, j.epoch);
    }
  }
}

/**
 * Hold the run's lock (.gen/locks/batch-<run>.lock) while its record is carried forward, so a poller
 * does not upload or create the batch of a run its submitter is sending right now. A short stale time:
 * a process killed mid-step must not hold the run back for long. The lock narrows races; the outbox
 * (find by metadata before create) and the epoch checks of every commit decide them.
 */
export async function lockRun(store: Store, run: string): Promise<HeldLock> {
  return lockNamed(store, `batch-${run}`, { waitMs: 2500, staleMs: 2000 });
}
