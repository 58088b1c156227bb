// The worker's loop: reap stale leases, then claim and work jobs with one slot per host slot in the
// pool, each slot keeping one serve session open for all its jobs. --once takes one job, --drain
// takes jobs until the queue is empty (a requeued job is tried again until its attempts run out),
// --watch keeps going until the stop signal, using watch events as hints plus a periodic rescan.
// Claims come from one batch listing of the queue for the whole run (see Claimer).

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { HostDownError, UsageError } from '../core/errors.js';
import { peekTokens } from '../core/receipt-peek.js';
import type { Worker } from '../store/attempts.js';
import { Claimer } from '../store/claim.js';
import { claimChosen } from '../store/claim-chosen.js';
import { readRecord } from '../store/durable.js';
import { keysIn } from '../store/job-states.js';
import { journal } from '../store/journal.js';
import { thisProcess } from '../store/process-identity.js';
import { type Reaped, reapStale } from '../store/reap.js';
import type { Store } from '../store/store.js';
import type { Pool, PoolHost } from './pool.js';
import { openCheckedSession, type SessionOptions } from './preflight.js';
import type { RelayFactory, ServeClient } from './serve-client.js';
import { type JobOutcome, type SessionPin, type WorkContext, workOne } from './work-one.js';

/** What every job of a run is worked with: the same fields as WorkContext, set once per run. */
type JobSettings = Pick<
  WorkContext,
  | 'store'
  | 'generator'
  | 'timeoutMs'
  | 'retryAborted'
  | 'leaseTtlS'
  | 'maxAttempts'
  | 'decodeReceipt'
  | 'userSecret'
  | 'notice'
>;

function pickJobSettings(o: JobSettings): JobSettings {
  const {
    store,
    generator,
    timeoutMs,
    retryAborted,
    leaseTtlS,
    maxAttempts,
    decodeReceipt,
    userSecret,
    notice,
  } = o;
  return {
    store,
    generator,
    timeoutMs,
    retryAborted: retryAborted === true,
    leaseTtlS,
    maxAttempts,
    decodeReceipt,
    userSecret,
    ...(notice === undefined ? {} : { notice }),
  };
}

export interface WorkOptions extends JobSettings {
  mode: 'once' | 'drain' | 'watch';
  /** The hosts (or launchers) and their slots; every host passed pre-flight unless `preflight` is false. */
  pool: Pool;
  /** Stop claiming when this resolves/aborts (SIGINT/SIGTERM, or the budget is spent). */
  signal?: AbortSignal;
  /** After the stop signal, jobs in flight get this long; then their sessions are killed and they are requeued. */
  graceMs?: number;
  /** Cut the jobs in flight now, as when the grace period ends (a second Ctrl-C). */
  cutSignal?: AbortSignal;
  /** Called when a slot has nothing to claim in watch mode; resolves when it is worth looking again. */
  waitForWork?: () => Promise<void>;
  /** Token budget: stop claiming once the receipts of this run report this many tokens. */
  maxTokens?: number;
  /** Tokens spent elsewhere in this run that count against maxTokens (batch answers polled meanwhile). */
  extraTokens?: () => number;
  onOutcome?: (o: JobOutcome, elapsedMs: number) => void;
  /** Arguments for every serve this run starts (the sandbox flags). */
  serveArgs?: readonly string[];
  onStart?: (key: string, destination: string) => void;
  /** A host could not be reached and takes no jobs for `ms` (or no more this run, when retired). */
  onHostDown?: (destination: string, reason: string, ms: number, retired: boolean) => void;
  relayStderr?: RelayFactory;
  /** Claim only these keys (`genjob work KEY…`), in this order. */
  keys?: readonly string[];
}

/** How long a host has to answer a cancel before its session is killed. */
const CANCEL_GRACE_MS = 10_000;

export interface WorkSummary {
  outcomes: JobOutcome[];
  reaped: Reaped[];
  tokens: number;
  budgetSpent: boolean;
  /** Keys still in flight when the grace period ran out (their sessions were killed; they went back to the queue). */
  cutAtShutdown: string[];
  /** Listings of the queue directory this run made (one per batch, see Claimer). */
  queueListings: number;
}

export function newWorker(): Worker {
  return {
    id: `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    host: hostname(),
    pid: process.pid,
    start: thisProcess().start,
  };
}

/** Every host's session: reaching it, its hello and the generator check (see preflight.ts). */
export async function preflight(pool: Pool, generator: string | null, opts: SessionOptions): Promise<void> {
  await refuseSharedAccounts(pool);
  const opened = await Promise.allSettled(
    pool.hosts.map(async (h) => {
      h.spare = await openCheckedSession(h.launcher, generator, opts);
    }),
  );
  const failed = opened.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    for (const h of pool.hosts) h.spare?.kill();
    throw failed.reason;
  }
}

/**
 * Two pool entries that ssh resolves to one account (two aliases of one host) would share one control
 * master, and closing one would cut the other's sessions: refused before anything is claimed.
 */
async function refuseSharedAccounts(pool: Pool): Promise<void> {
  const accounts = await Promise.all(pool.hosts.map((h) => h.launcher.account?.()));
  const seen = new Map<string, string>();
  for (const [i, h] of pool.hosts.entries()) {
    const account = accounts[i];
    if (account === undefined) continue;
    const first = seen.get(account);
    if (first !== undefined)
      throw new UsageError(
        'EGJ_USAGE',
        `${first} and ${h.launcher.destination} reach the same account (${account}); give it once with a slot count (N/${first})`,
      );
    seen.set(account, h.launcher.destination);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function runWork(o: WorkOptions): Promise<WorkSummary> {
  const worker = newWorker();
  const reaped = await reapStale(o.store, o.leaseTtlS);
  const outcomes: JobOutcome[] = [];
  const claimer = new Claimer(o.store, worker.id);
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
  // (the answer is then in doubt, so workOne requeues the job without spending an attempt, and the
  // host keeps the result)
  const inFlight = new Map<string, () => void>();
  /** Idle slots waiting for a job in flight elsewhere to settle (it may have gone back to the queue). */
  const settledWaiters: Array<() => void> = [];
  const cutAtShutdown: string[] = [];
  let graceTimer: NodeJS.Timeout | undefined;
  const cutAll = () => {
    clearTimeout(graceTimer);
    for (const [key, drop] of inFlight) {
      cutAtShutdown.push(key);
      drop();
    }
  };
  const onStop = () => {
    if (o.graceMs === undefined) return;
    graceTimer = setTimeout(cutAll, o.graceMs);
  };
  if (o.signal?.aborted) onStop();
  else o.signal?.addEventListener('abort', onStop, { once: true });
  o.cutSignal?.addEventListener('abort', cutAll, { once: true });
  const sessionOpts: SessionOptions = {
    args: o.serveArgs ?? [],
    maxAnswerBytes: 8 * 1024 * 1024 * 1024,
    helloTimeoutMs: 60_000,
    ...(o.relayStderr ? { relayStderr: o.relayStderr } : {}),
  };

  /**
   * Until a job in flight settles, or a second passes. The second's timer is cleared when a job settles
   * first: left pending, it kept the process alive up to a second after the run's last job.
   */
  async function waitForSettled(): Promise<void> {
    const done = new AbortController();
    const stop = o.signal ? AbortSignal.any([o.signal, done.signal]) : done.signal;
    try {
      await Promise.race([new Promise<void>((r) => settledWaiters.push(r)), sleep(1000, stop)]);
    } finally {
      done.abort();
    }
  }

  /** Reach the host again (with a promoted job's own generator and serve flags when `pin` says so). */
  async function reconnect(host: PoolHost, pin?: SessionPin): Promise<ServeClient | undefined> {
    try {
      const client = pin
        ? await openCheckedSession(host.launcher, pin.generator, { ...sessionOpts, args: pin.args })
        : await openCheckedSession(host.launcher, o.generator, sessionOpts);
      if (host.failures > 0) journal(o.store, { event: 'host-up', destination: host.destination });
      // a hello is not yet a working host (one may pass its check and refuse every run): the count of
      // failures in a row is reset only once a job reached a generator there (below)
      host.markReachable();
      return client;
    } catch (err) {
      if (err instanceof UsageError && err.code === 'EGJ_SSH_HOST_KEY') throw err; // never routed around
      hostDown(host, (err as Error).message);
      return undefined;
    }
  }

  function hostDown(host: PoolHost, reason: string): void {
    if (host.isDown()) return; // another slot of this host saw it first
    const ms = host.markDown(reason);
    const retired = host.retired !== undefined;
    journal(o.store, { event: 'host-down', destination: host.destination, reason, retry_in_ms: ms, retired });
    o.onHostDown?.(host.destination, reason, ms, retired);
  }

  async function slot(host: PoolHost): Promise<void> {
    let client: ServeClient | undefined;
    let cut = false;
    /** The job this slot works on: its session's relayed output is named by it. */
    let current: string | undefined;
    /** The serve flags the slot's session was started with: a promoted job may need others. */
    let clientArgs = argsKey(sessionOpts.args);
    const open = async (pin?: SessionPin): Promise<ServeClient> => {
      const want = argsKey(pin?.args ?? sessionOpts.args);
      if (client?.alive && clientArgs === want) return client;
      await client?.close();
      client = undefined;
      if (pin === undefined && host.spare?.alive) {
        client = host.spare;
        host.spare = undefined;
      } else client = await reconnect(host, pin);
      if (client === undefined)
        throw new HostDownError(host.destination, 'could not be reached; the job goes back undelivered');
      clientArgs = want;
      return client;
    };
    const ctx: WorkContext = {
      ...pickJobSettings(o),
      launcher: host.launcher,
      worker,
      session: async (pin) => {
        const c = await open(pin);
        c.working(current);
        return c;
      },
      dropSession: () => {
        client?.kill();
        client = undefined;
      },
      cancelSession: () => client?.cancel(CANCEL_GRACE_MS),
      wasCut: () => cut,
      hostTrouble: (reason) => hostDown(host, reason),
    };
    try {
      while (!stopped()) {
        if (host.retired !== undefined) return;
        if (host.isDown()) {
          // look once a second whether anything is left for it to do, so a drain ends on time
          if (o.mode !== 'watch' && keysIn(o.store, 'queue').length === 0) return;
          await sleep(Math.min(1000, host.downUntil - Date.now()), o.signal);
          if (stopped() || host.isDown()) continue;
          // the session a refusal left open is closed first: overwritten, its serve process and pipes
          // stayed open, and kept `work` from exiting once its run was over
          await client?.close();
          client = await reconnect(host);
          clientArgs = argsKey(sessionOpts.args);
          continue;
        }
        const key = o.keys
          ? claimChosen(o.store, worker.id, o.keys)
          : claimer.next((k) => o.pool.accepts(o.store, host, k));
        if (key === undefined) {
          if (o.mode === 'once') return;
          if (claimer.held > 0 || inFlight.size > 0) {
            // jobs in doubt on a host that is down (wait for it, or for --in-doubt-after), or jobs
            // in flight on other slots that may yet come back to the queue: a drain waits for them
            await waitForSettled();
            continue;
          }
          if (o.mode !== 'watch' || !o.waitForWork) return;
          await o.waitForWork();
          if (o.mode === 'watch') await reapStale(o.store, o.leaseTtlS).then((r) => reaped.push(...r));
          continue;
        }
        taken += 1;
        cut = false;
        o.onStart?.(key, host.destination);
        const started = Date.now();
        inFlight.set(key, () => {
          cut = true;
          ctx.dropSession();
        });
        current = key;
        const outcome = await workOne(ctx, key).finally(() => {
          current = undefined;
          client?.working(undefined);
          inFlight.delete(key);
          for (const wake of settledWaiters.splice(0)) wake();
        });
        outcomes.push(outcome);
        if (
          outcome.outcome === 'received' ||
          (outcome.outcome === 'requeued' && outcome.attempt_spent !== false)
        )
          host.markUp();
        const counted = outcome.outcome in host.counts ? (outcome.outcome as 'received') : 'other';
        host.counts[counted] += 1;
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

  const slots = o.pool.hosts.flatMap((h) => Array.from({ length: o.mode === 'once' ? 1 : h.slots }, () => h));
  try {
    await Promise.all((o.mode === 'once' ? slots.slice(0, 1) : slots).map((h) => slot(h)));
  } finally {
    clearTimeout(graceTimer);
    o.signal?.removeEventListener('abort', onStop);
    o.cutSignal?.removeEventListener('abort', cutAll);
    await Promise.all(o.pool.hosts.map((h) => h.spare?.close()));
  }
  return {
    outcomes,
    reaped,
    tokens: tokens + (o.extraTokens?.() ?? 0),
    budgetSpent,
    cutAtShutdown,
    queueListings: claimer.listings,
  };
}

/** serve's arguments as one comparable string. */
function argsKey(args: readonly string[] | undefined): string {
  return (args ?? []).join('\0');
}

function receiptTokens(store: Store, key: string): number {
  const bytes = readRecord(store, store.layout.receipt(key));
  return bytes === undefined ? 0 : peekTokens(bytes);
}
