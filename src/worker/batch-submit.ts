// work --batch: claim up to --batch-size queued jobs, start an attempt for each (its lease names the
// run, then the batch), build one JSONL whose lines' custom_id is the job key, record the intent in
// .gen/batches/<run>/ and only then upload and create the batch (batch-send.ts). A job that cannot be
// sent — malformed, out of attempts, stale, not UTF-8 — ends here as an interactive attempt would.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { requireUserSecret } from '../remote/cache-mac.js';
import { batchFormat, batchLine } from '../remote/generators/openai-batch.js';
import { NoBatchApiError } from '../remote/generators/openai-batch-api.js';
import {
  type BatchJobEntry,
  type BatchRecord,
  readRecord,
  recordIntent,
  runDir,
  sealIntent,
} from '../store/batch-outbox.js';
import { claimNext } from '../store/claim.js';
import { INPUT_CHANGED, inputChangedReason } from '../store/dead-jobs.js';
import { journal } from '../store/journal.js';
import { beat } from '../store/lease.js';
import { startAttempt } from './admit-job.js';
import { commitAnswer } from './batch-commit.js';
import type { BatchContext } from './batch-context.js';
import { endIntent } from './batch-end.js';
import { lockRun, sendRecord } from './batch-send.js';
import { giveBack, release } from './release-job.js';
import type { JobOutcome } from './work-one.js';

export interface Submitted {
  record: BatchRecord | null;
  /** Jobs that ended without being sent (dead, recovered, an aborted receipt). */
  outcomes: JobOutcome[];
}

/** A run id that sorts by time: `20261201T053400123Z-<6 hex>`. */
export function newRunId(now = new Date()): string {
  return `${now.toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}`;
}

export async function submitBatch(ctx: BatchContext, batchSize: number): Promise<Submitted> {
  const { store } = ctx;
  // the intent is sealed, or it is never sent: without a secret, say why before a job is claimed
  const secret = ctx.userSecret ?? (await requireUserSecret());
  const run = newRunId();
  const format = batchFormat(ctx.config);
  const entries: BatchJobEntry[] = [];
  const lines: string[] = [];
  const outcomes: JobOutcome[] = [];
  // reading and hashing many inputs takes a while: keep the claimed leases alive meanwhile
  const heartbeat = setInterval(
    () => {
      for (const e of entries) beat(store, e.key, e.epoch);
    },
    Math.max(250, (ctx.leaseTtlS * 1000) / 4),
  );
  let current: { key: string; epoch?: number } | undefined;
  try {
    while (entries.length < batchSize) {
      const key = claimNext(store, ctx.worker.id);
      if (key === undefined) break;
      current = { key };
      const prepared = await prepare(ctx, key, run, format, current);
      current = undefined;
      if ('outcome' in prepared) outcomes.push(prepared);
      else {
        entries.push(prepared.entry);
        lines.push(prepared.line);
      }
    }
  } catch (err) {
    throw await putBack(store, [...(current ? [current] : []), ...entries], err);
  } finally {
    clearInterval(heartbeat);
  }
  if (entries.length === 0) return { record: null, outcomes };
  const jsonl = Buffer.from(`${lines.join('\n')}\n`);
  let record: BatchRecord = {
    run,
    state: 'intent',
    created_at: new Date().toISOString(),
    jobs: entries,
    file_id: null,
    batch_id: null,
    provider_status: null,
    intent_seal: sealIntent(secret, run, entries, jsonl),
  };
  // the run's lock is held from before the intent is visible until the batch id is recorded
  const lock = await lockRun(store, run).catch(async (err) => {
    throw await putBack(store, entries, err);
  });
  try {
    try {
      recordIntent(store, record, jsonl);
    } catch (err) {
      // a record that became visible before the failure (its directory's fsync) is an intent that
      // --batch-poll sends: those jobs stay; without one nothing can be sent, and they go back
      if (readRecord(store, run) === undefined) throw await putBack(store, entries, err);
      throw err;
    }
    journal(store, { event: 'batch-intent', run, keys: entries.map((e) => e.key) });
    try {
      record = await sendRecord(ctx, record);
    } catch (err) {
      if (!(err instanceof NoBatchApiError)) throw err;
      // nothing reached the provider, and nothing can: the intent ends and its jobs go back
      const back = await endIntent(store, record, {
        code: err.code,
        reason: `${err.message}; nothing was submitted`,
      });
      err.message = `${err.message}; nothing was submitted, ${back.length} job(s) back in the queue`;
      throw err;
    }
  } finally {
    await lock.release();
  }
  return { record, outcomes };
}

/** Nothing of this run was submitted: every job it claimed goes back now, no attempt spent. */
async function putBack(
  store: BatchContext['store'],
  jobs: ReadonlyArray<{ key: string; epoch?: number }>,
  err: unknown,
): Promise<unknown> {
  const notes: string[] = [];
  for (const b of jobs)
    notes.push(await giveBack(store, b.key, err, { epoch: b.epoch, spendAttempt: false }));
  if (err instanceof Error && notes.length > 0) err.message = `${err.message}; ${notes.join('; ')}`;
  return err;
}

type Prepared = { entry: BatchJobEntry; line: string } | JobOutcome;

async function prepare(
  ctx: BatchContext,
  key: string,
  run: string,
  format: BatchJobEntry['format'],
  started: { epoch?: number },
): Promise<Prepared> {
  const { store } = ctx;
  const begun = startAttempt(store, key, ctx, `batch ${run}`, started);
  if ('outcome' in begun) return begun;
  const { job, digest, lease } = begun;
  const entry: BatchJobEntry = { key, epoch: lease.epoch, job_digest: digest, format };
  const built = batchLine(ctx.config, job, store.root, format);
  if ('changed' in built) {
    const reason = inputChangedReason(built.changed, key);
    if (!(await release(store, key, lease.epoch, 'dead', { code: INPUT_CHANGED, reason })))
      return { key, outcome: 'superseded', reason: `lease of epoch ${lease.epoch} was lost` };
    return { key, outcome: 'dead', reason };
  }
  if ('problem' in built) {
    // nothing was sent: an aborted receipt, as an interactive attempt ends before its first request
    const problem = built.problem;
    return commitAnswer(ctx, job, entry, null, join(runDir(store, run), 'raw', key), () => ({
      status: 'aborted',
      reason: problem,
      usage: { prompt_tokens: 0, completion_tokens: 0, requests: 0 },
      version: null,
    }));
  }
  return { entry, line: built.line };
}
