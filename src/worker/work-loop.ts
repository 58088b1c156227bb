// The worker's loop: reap stale leases, then claim and work jobs with N slots in flight, each
// slot keeping one serve session open for all its jobs. --once takes one job, --drain takes jobs
// until the queue is empty (a requeued job is tried again until its attempts run out), --watch
// keeps going until the stop signal, using watch events as hints plus a periodic full rescan.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { peekTokens } from '../core/receipt-peek.js';
import type { Worker } from '../store/attempts.js';
import { claimNext } from '../store/claim.js';
import { claimChosen } from '../store/claim-chosen.js';
import { readRecord } from '../store/durable.js';
import { thisProcess } from '../store/process-identity.js';
import { type Reaped, reapStale } from '../store/reap.js';
import type { Store } from '../store/store.js';
import { ServeClient } from './serve-client.js';
import { type JobOutcome, type WorkContext, workOne } from './work-one.js';

/** What every job of a run is worked with: the same fields as WorkContext, set once per run. */
type JobSettings = Pick<
  WorkContext,
  | 'store'
  | 'launcher'
  | 'generator'
  | 'timeoutMs'
  | 'retryAborted'
  | 'leaseTtlS'
  | 'maxAttempts'
  | 'decodeReceipt'
>;

function pickJobSettings(o: JobSettings): JobSettings {
  const { store, launcher, generator, timeoutMs, retryAborted, leaseTtlS, maxAttempts, decodeReceipt } = o;
  return {
    store,
    launcher,
    generator,
    timeoutMs,
    retryAborted: retryAborted === true,
    leaseTtlS,
    maxAttempts,
    decodeReceipt,
  };
}

export interface WorkOptions extends JobSettings {
  mode: 'once' | 'drain' | 'watch';
  concurrency: number;
  /** Stop claiming when this resolves/aborts (SIGINT/SIGTERM, or the budget is spent). */
  signal?: AbortSignal;
  /** After the stop signal, jobs in flight get this long; then their sessions are killed and they are requeued. */
  graceMs?: number;
  /** Called when a slot has nothing to claim in watch mode; resolves when it is worth looking again. */
  waitForWork?: () => Promise<void>;
  /** Token budget: stop claiming once the receipts of this run report this many tokens. */
  maxTokens?: number;
  /** Tokens spent elsewhere in this run that count against maxTokens (batch answers polled meanwhile). */
  extraTokens?: () => number;
  onOutcome?: (o: JobOutcome, elapsedMs: number) => void;
  /** Arguments for every serve this run starts (the sandbox flags). */
  serveArgs?: readonly string[];
  onStart?: (key: string) => void;
  relayStderr?: (chunk: Buffer) => void;
  /** Claim only these keys (`genjob work KEY…`), in this order. */
  keys?: readonly string[];
}

export interface WorkSummary {
  outcomes: JobOutcome[];
  reaped: Reaped[];
  tokens: number;
  budgetSpent: boolean;
  /** Keys still in flight when the grace period ran out (their sessions were killed; they went back to the queue). */
  cutAtShutdown: string[];
}

export function newWorker(): Worker {
  return {
    id: `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    host: hostname(),
    pid: process.pid,
    start: thisProcess().start,
  };
}

export async function runWork(o: WorkOptions): Promise<WorkSummary> {
  const worker = newWorker();
  const reaped = await reapStale(o.store, o.leaseTtlS);
  const outcomes: JobOutcome[] = [];
  let tokens = 0;
  let budgetSpent = false;
  let taken = 0;
  const overBudget = () => {
    if (o.maxTokens !== undefined && o.extraTokens && tokens + o.extraTokens() >= o.maxTokens)
      budgetSpent = true;
    return budgetSpent;
  };
  const stopped = () => o.signal?.aborted === true || overBudget() || (o.mode === 'once' && taken >= 1);
  // graceful shutdown: after the stop signal, in-flight jobs get graceMs, then their sessions are killed
  // (the answer is then in doubt, so workOne requeues the job under its epoch and the host keeps the result)
  const inFlight = new Map<string, () => void>();
  const cutAtShutdown: string[] = [];
  let graceTimer: NodeJS.Timeout | undefined;
  const onStop = () => {
    if (o.graceMs === undefined) return;
    graceTimer = setTimeout(() => {
      for (const [key, drop] of inFlight) {
        cutAtShutdown.push(key);
        drop();
      }
    }, o.graceMs);
  };
  if (o.signal?.aborted) onStop();
  else o.signal?.addEventListener('abort', onStop, { once: true });

  async function slot(): Promise<void> {
    let client: ServeClient | undefined;
    const ctx: WorkContext = {
      ...pickJobSettings(o),
      worker,
      session: async () => {
        if (client?.alive) return client;
        // fail fast and clearly on an unknown or changed host key, before any bytes are sent
        await o.launcher.shipmentFacts();
        client = await ServeClient.open(o.launcher, o.serveArgs ?? [], {
          maxAnswerBytes: 8 * 1024 * 1024 * 1024,
          helloTimeoutMs: 60_000,
          ...(o.relayStderr ? { relayStderr: o.relayStderr } : {}),
        });
        return client;
      },
      dropSession: () => {
        client?.kill();
        client = undefined;
      },
    };
    try {
      while (!stopped()) {
        const key = o.keys ? claimChosen(o.store, worker.id, o.keys) : claimNext(o.store, worker.id);
        if (key === undefined) {
          if (o.mode !== 'watch' || !o.waitForWork) return;
          await o.waitForWork();
          if (o.mode === 'watch') await reapStale(o.store, o.leaseTtlS).then((r) => reaped.push(...r));
          continue;
        }
        taken += 1;
        o.onStart?.(key);
        const started = Date.now();
        inFlight.set(key, ctx.dropSession);
        const outcome = await workOne(ctx, key).finally(() => inFlight.delete(key));
        outcomes.push(outcome);
        if (outcome.outcome === 'received' && o.maxTokens !== undefined) {
          tokens += receiptTokens(o.store, key);
          if (tokens >= o.maxTokens) budgetSpent = true;
        }
        o.onOutcome?.(outcome, Date.now() - started);
      }
    } finally {
      await client?.close();
    }
  }

  const slots = o.mode === 'once' ? 1 : Math.max(1, o.concurrency);
  try {
    await Promise.all(Array.from({ length: slots }, () => slot()));
  } finally {
    clearTimeout(graceTimer);
    o.signal?.removeEventListener('abort', onStop);
  }
  return { outcomes, reaped, tokens: tokens + (o.extraTokens?.() ?? 0), budgetSpent, cutAtShutdown };
}

function receiptTokens(store: Store, key: string): number {
  const bytes = readRecord(store, store.layout.receipt(key));
  return bytes === undefined ? 0 : peekTokens(bytes);
}
