// work --batch-poll (and --watch, on a timer): carry every open batch record forward. A record not yet
// submitted is sent (batch-send.ts); a submitted one is looked at (GET /batches/{id}) and its jobs'
// leases are kept alive. A finished batch's output and error files are downloaded into its run
// directory and each job is settled: its line becomes a receipt (batch-commit.ts), and a job the batch
// never answered (expired, cancelled, failed) goes back to the queue without spending an attempt.
import { join } from 'node:path';
import { BatchApiError, ConflictError, GenjobError } from '../core/errors.js';
import { parseJob } from '../core/job-schema.js';
import { peekTokens } from '../core/receipt-peek.js';
import { lineOutcome, parseResultFile } from '../remote/generators/openai-batch.js';
import {
  fileContent,
  getBatch,
  NoBatchApiError,
  type ProviderBatch,
} from '../remote/generators/openai-batch-api.js';
import { markUnspent } from '../store/attempts.js';
import {
  type BatchRecord,
  openRecords,
  readRecord,
  runDirToWrite,
  updateRecord,
} from '../store/batch-outbox.js';
import { deadLetterFile } from '../store/dead-letter.js';
import { exists, readIfExists, replaceFile } from '../store/durable.js';
import { journal } from '../store/journal.js';
import type { HeldLock } from '../store/key-lock.js';
import { commitAnswer, finishLanded, stillOurs } from './batch-commit.js';
import type { BatchContext } from './batch-context.js';
import { endIntent } from './batch-end.js';
import { keepLeases, lockRun, sendRecord, UnsealedIntentError } from './batch-send.js';
import { requeue } from './release-job.js';
import type { JobOutcome } from './work-one.js';

/** Provider statuses after which a batch will answer nothing more. */
const FINISHED = new Set(['completed', 'expired', 'cancelled', 'failed']);
/** Per-line error codes of requests the provider never ran (the window ended, the batch was cancelled). */
const NOT_RUN = new Set(['batch_expired', 'batch_cancelled']);

export interface OpenBatch {
  run: string;
  batch_id: string | null;
  state: BatchRecord['state'];
  provider_status: string | null;
  jobs: number;
}

export interface PollSummary {
  outcomes: JobOutcome[];
  /** Batches still open after this poll. */
  open: OpenBatch[];
  /** Provider calls that failed; their step is left in the record for the next run. */
  problems: string[];
  /** Tokens reported by the receipts this poll committed (for --max-tokens). */
  tokens: number;
}

const openOf = (r: BatchRecord): OpenBatch => ({
  run: r.run,
  batch_id: r.batch_id,
  state: r.state,
  provider_status: r.provider_status,
  jobs: r.jobs.length,
});

export async function pollBatches(ctx: BatchContext): Promise<PollSummary> {
  const { store } = ctx;
  const summary: PollSummary = { outcomes: [], open: [], problems: [], tokens: 0 };
  for (const listed of openRecords(store)) {
    let lock: HeldLock;
    try {
      lock = await lockRun(store, listed.run);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      summary.open.push(openOf(listed)); // another process is polling this one
      continue;
    }
    try {
      let rec = readRecord(store, listed.run) ?? listed;
      if (rec.state === 'done') continue;
      try {
        rec = await sendRecord(ctx, rec);
        const batch = await getBatch(ctx.config, rec.batch_id!);
        keepLeases(ctx, rec);
        if (!FINISHED.has(batch.status)) {
          if (batch.status !== rec.provider_status) {
            rec = { ...rec, provider_status: batch.status };
            updateRecord(store, rec);
          }
          summary.open.push(openOf(rec));
          continue;
        }
        await settle(ctx, rec, batch, summary);
        updateRecord(store, { ...rec, state: 'done', provider_status: batch.status });
        journal(store, { event: 'batch-done', run: rec.run, batch: batch.id, status: batch.status });
      } catch (err) {
        if (
          (err instanceof NoBatchApiError || err instanceof UnsealedIntentError) &&
          rec.state === 'intent'
        ) {
          // never uploaded, and the endpoint has no batch API or the intent is not this user's to
          // send: the intent ends, the jobs its attempts still hold go back
          const reason = `${err.message}; batch run ${rec.run} ended, nothing was submitted`;
          summary.outcomes.push(...(await endIntent(store, rec, { code: err.code, reason })));
          continue;
        }
        if (!(err instanceof BatchApiError || err instanceof NoBatchApiError)) throw err;
        summary.problems.push(`batch run ${rec.run}: ${err.message}`);
        summary.open.push(openOf(readRecord(store, rec.run) ?? rec));
      }
    } finally {
      await lock.release();
    }
  }
  return summary;
}

async function settle(ctx: BatchContext, rec: BatchRecord, batch: ProviderBatch, s: PollSummary) {
  const { store } = ctx;
  const dir = runDirToWrite(store, rec.run);
  const texts: string[] = [];
  for (const [name, id] of [
    ['output.jsonl', batch.output_file_id],
    ['errors.jsonl', batch.error_file_id],
  ] as const) {
    if (id === null) continue;
    const content = await fileContent(ctx.config, id);
    replaceFile(store, join(dir, name), Buffer.from(content)); // kept for inspection
    texts.push(content);
  }
  const lines = parseResultFile(...texts);
  for (const e of rec.jobs) {
    const running = store.layout.jobFile('running', e.key);
    if (exists(store, running) && (await finishLanded(store, e))) {
      s.outcomes.push({ key: e.key, outcome: 'recovered' });
      continue;
    }
    if (!stillOurs(store, e)) continue; // settled before a crash, or no longer this attempt's
    const line = lines.get(e.key);
    if (line === undefined || NOT_RUN.has(line.error?.code ?? '')) {
      markUnspent(store, e.key, e.epoch);
      const reason = `batch ${batch.id} ended ${batch.status} without answering this job; back in the queue, no attempt spent`;
      s.outcomes.push(await requeue(store, e.key, e.epoch, reason, 'EGJ_BATCH_UNANSWERED'));
      continue;
    }
    let job: ReturnType<typeof parseJob>['job'];
    try {
      job = parseJob(readIfExists(store, running)!, `running/${e.key}.json`).job;
    } catch (err) {
      if (!(err instanceof GenjobError)) throw err;
      deadLetterFile(store, running, `${e.key}.job`, { key: e.key, code: err.code, reason: err.message });
      s.outcomes.push({ key: e.key, outcome: 'dead', reason: err.message });
      continue;
    }
    const raw = runDirToWrite(store, rec.run, ['raw', e.key]);
    const outcome = await commitAnswer(ctx, job, e, batch.id, raw, (target) =>
      lineOutcome(line, e.format, target, batch.id),
    );
    s.outcomes.push(outcome);
    if (outcome.outcome === 'received') {
      const bytes = readIfExists(store, store.layout.receipt(e.key));
      if (bytes !== undefined) s.tokens += peekTokens(bytes);
    }
  }
}
