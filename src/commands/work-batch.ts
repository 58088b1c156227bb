// genjob work --batch | --batch-poll: generation through the provider's batch endpoint, from this
// machine (the endpoint settings are read here, as for a local serve). --batch first carries the open
// batches forward (so one a crash left unrecorded is found before any other is created), then submits
// the queued jobs as one batch; --batch-poll only carries them forward. Exit 3 when a provider call
// failed (the outbox keeps the step for the next run), 4 when a lease was lost, else 0.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { notice } from '../cli/stderr-lines.js';
import { canonicalBytes } from '../core/canonical-json.js';
import { BatchApiError, UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import type { Receipt } from '../core/receipt.js';
import { userSecret } from '../remote/cache-mac.js';
import { OPENAI_GENERATOR_NAME } from '../remote/generators/openai-answer.js';
import { NoBatchApiError } from '../remote/generators/openai-batch-api.js';
import { readOpenAiConfig } from '../remote/generators/openai-config.js';
import { openRecords } from '../store/batch-outbox.js';
import { reapStale } from '../store/reap.js';
import type { Store } from '../store/store.js';
import type { BatchContext } from '../worker/batch-context.js';
import { pollBatches } from '../worker/batch-poll.js';
import { type Submitted, submitBatch } from '../worker/batch-submit.js';
import { newWorker } from '../worker/work-loop.js';

export interface WorkBatchOptions extends CommonOptions {
  batch?: boolean;
  batchPoll?: boolean;
  batchSize?: number;
  once?: boolean;
  drain?: boolean;
  watch?: boolean;
  generator?: string;
  host?: string | readonly string[];
  timeout: number;
  leaseTtl: number;
  maxAttempts: number;
  maxTokens?: number;
  quiet?: boolean;
}

export const DEFAULT_BATCH_SIZE = 1000;

/** The batch flow's context for `store`, or a usage error naming the missing setting. */
export async function batchContext(
  store: Store,
  o: Pick<WorkBatchOptions, 'timeout' | 'leaseTtl' | 'maxAttempts'>,
): Promise<BatchContext> {
  const loaded = readOpenAiConfig(process.env);
  if (!loaded.ok) throw new UsageError('EGJ_USAGE', `${OPENAI_GENERATOR_NAME} batch: ${loaded.problem}`);
  return {
    store,
    worker: newWorker(),
    config: loaded.config,
    leaseTtlS: o.leaseTtl,
    maxAttempts: o.maxAttempts,
    timeoutMs: Math.round(o.timeout * 1000),
    encodeReceipt: await receiptEncoder(),
    userSecret: await userSecret(),
  };
}

/** Receipts are signed with GENJOB_SIGN_KEY when it is set, as a local serve signs them. */
async function receiptEncoder(): Promise<(r: Receipt) => Buffer> {
  const file = process.env.GENJOB_SIGN_KEY || undefined;
  if (!file) return (r) => canonicalBytes(r);
  const { loadPrivateKey, keyIdOf } = await import('../trust/keys.js');
  const { signReceipt } = await import('../core/receipt-envelope.js');
  const key = loadPrivateKey(file);
  const keyid = keyIdOf(key);
  return (r) => signReceipt(r, key, keyid);
}

export async function workBatch(o: WorkBatchOptions): Promise<CommandResult> {
  if (o.once || o.drain || o.watch)
    throw new UsageError(
      'EGJ_USAGE',
      '--batch and --batch-poll are modes of their own: drop --once, --drain or --watch',
    );
  if (o.batch && o.batchPoll) throw new UsageError('EGJ_USAGE', 'choose one of --batch or --batch-poll');
  if (o.host?.length)
    throw new UsageError(
      'EGJ_USAGE',
      '--batch and --batch-poll call the endpoint from this machine; drop --host',
    );
  if (o.batch && o.generator !== OPENAI_GENERATOR_NAME)
    throw new UsageError('EGJ_USAGE', `--batch needs --generator ${OPENAI_GENERATOR_NAME}`);
  const store = openStore(o);
  // like any work run: stale leases of dead workers go back to the queue (a job in a batch is not one),
  // also when there is nothing to poll (a batch worker that died before recording its intent)
  const reaped = await reapStale(store, o.leaseTtl);
  if (!o.batch && openRecords(store).length === 0) {
    // nothing to poll: the endpoint settings are not needed
    return {
      human: `0 batch(es) open${reaped.length ? `; ${reaped.length} job(s) of dead workers back in the queue` : ''}`,
      json: {
        ok: true,
        submitted: null,
        outcomes: [],
        open: [],
        problems: [],
        reaped,
        tokens: 0,
        budget_spent: false,
      },
    };
  }
  const ctx = await batchContext(store, o);
  const say = (line: string) => {
    if (!o.quiet) notice(line);
  };

  const polled = await pollBatches(ctx);
  const budgetSpent = o.maxTokens !== undefined && polled.tokens >= o.maxTokens;
  let submitted: Submitted = { record: null, outcomes: [] };
  const problems = [...polled.problems];
  /** The endpoint has no batch API: said once the polled outcomes are printed (exit 2). */
  let noBatchApi: NoBatchApiError | undefined;
  if (o.batch && !budgetSpent) {
    try {
      submitted = await submitBatch(ctx, o.batchSize ?? DEFAULT_BATCH_SIZE);
    } catch (err) {
      if (err instanceof NoBatchApiError) noBatchApi = err;
      else if (!(err instanceof BatchApiError)) throw err;
      else
        problems.push(
          `${err.message}; the jobs stay in the outbox and the next --batch or --batch-poll resumes`,
        );
    }
  }
  const outcomes = [...polled.outcomes, ...submitted.outcomes];
  for (const x of outcomes)
    say(
      `${x.key.slice(0, 12)} ${x.outcome}${'status' in x ? ` ${x.status}` : ''}${'reason' in x && x.reason ? `: ${x.reason.split('\n')[0]}` : ''}`,
    );

  if (noBatchApi) throw noBatchApi; // its jobs are back in the queue; its message says so
  const lines: string[] = [];
  const rec = submitted.record;
  if (rec?.batch_id)
    lines.push(`batch ${rec.batch_id} submitted: ${rec.jobs.length} job(s) (run ${rec.run})`);
  else if (rec) lines.push(`batch run ${rec.run} recorded with ${rec.jobs.length} job(s), not yet submitted`);
  else if (o.batch && !budgetSpent)
    lines.push(
      submitted.outcomes.length > 0
        ? `no batch submitted: the ${submitted.outcomes.length} job(s) taken ended before anything was sent`
        : 'queue empty: no batch submitted',
    );
  const settled = polled.outcomes.length;
  if (settled) lines.push(`${settled} job(s) settled from finished batches`);
  const open = [...polled.open];
  if (rec)
    open.push({
      run: rec.run,
      batch_id: rec.batch_id,
      state: rec.state,
      provider_status: rec.provider_status,
      jobs: rec.jobs.length,
    });
  lines.push(`${open.length} batch(es) open`);
  if (reaped.length) lines.push(`${reaped.length} stale lease(s) reaped back to the queue`);
  if (budgetSpent) lines.push(`token budget spent (${polled.tokens} ≥ ${o.maxTokens}): no new batch`);
  lines.push(...problems);
  const superseded = outcomes.some((x) => x.outcome === 'superseded');
  const exitCode = superseded ? EXIT.CONFLICT : problems.length > 0 ? EXIT.REJECTED : EXIT.OK;
  // --quiet hides progress, never why the run exits non-zero
  if (o.quiet && exitCode !== EXIT.OK) {
    for (const x of outcomes)
      if (x.outcome === 'superseded') notice(`${x.key.slice(0, 12)} stood down: ${x.reason}`);
    for (const p of problems) notice(p);
  }
  return {
    exitCode,
    human: lines.join('\n'),
    json: {
      ok: exitCode === EXIT.OK,
      submitted: rec ? { run: rec.run, batch_id: rec.batch_id, keys: rec.jobs.map((j) => j.key) } : null,
      outcomes,
      open,
      problems,
      reaped,
      tokens: polled.tokens,
      budget_spent: budgetSpent,
    },
  };
}
