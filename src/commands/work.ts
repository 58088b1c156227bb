// genjob work --once | --drain | --watch: claim jobs and ship each to `genjob serve` (a local
// child, or --host over ssh), keeping one session per slot for the whole run. Exit 0 when every
// job taken ended with a receipt or in dead/; 4 when a lease was superseded and we stood down;
// 3 when an answer was unusable and the job went back to the queue.

import { dirname } from 'node:path';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { lineRelay, notice } from '../cli/stderr-lines.js';
import { RejectedError, UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { pathExists } from '../core/path-exists.js';
import type { Receipt } from '../core/receipt.js';
import { decodeReceiptWithPolicy } from '../core/receipt-decode.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { userSecret } from '../remote/cache-mac.js';
import { generatorCommandProblem } from '../remote/generator-check.js';
import { requireBwrap } from '../sandbox/bwrap-probe.js';
import { sandboxUser } from '../sandbox/sandbox-user.js';
import { serveArgsOf } from '../sandbox/serve-policy.js';
import { wasCancelled } from '../store/cancel-job.js';
import { findJob, keysIn, resolveKey } from '../store/job-states.js';
import { anyPromotedGenerator } from '../store/promotion.js';
import { type Reaped, reapStale } from '../store/reap.js';
import type { Store } from '../store/store.js';
import { checkLaunchEnvName } from '../transport/launch-env.js';
import type { ServeLauncher } from '../transport/launcher.js';
import { localLauncher } from '../transport/local-launcher.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { BACKOFF_BASE_MS, DEFAULT_IN_DOUBT_AFTER_S, Pool, PoolHost, parseSlots } from '../worker/pool.js';
import { requireLocalSigner, SIGNING_HINT } from '../worker/signing-host.js';
import { watchQueue } from '../worker/watch-queue.js';
import { preflight, runWork } from '../worker/work-loop.js';
import type { JobOutcome } from '../worker/work-one.js';

export interface WorkCliOptions extends CommonOptions {
  once?: boolean;
  drain?: boolean;
  watch?: boolean;
  generator?: string;
  concurrency: number;
  timeout: number;
  leaseTtl: number;
  maxAttempts: number;
  maxTokens?: number;
  host?: string[];
  launch?: string[];
  /** Names of the worker's environment passed to --launch commands (on top of the minimal set). */
  launchEnv?: string[];
  inDoubtAfter?: number;
  /** Seconds a host that failed waits before it is tried again; doubled after each failure in a row. */
  hostBackoff?: number;
  port?: number;
  identity?: string;
  remoteCmd: string;
  sshOption?: string[];
  sshConfig?: string;
  quiet?: boolean;
  retryAborted?: boolean;
  grace?: number;
  keys?: string[];
  /** Work the queued jobs of this run (as named keys). */
  run?: string;
  failOnError?: boolean;
  generatorEnv?: string[];
  generatorNetwork?: boolean;
  generatorBind?: string[];
  generatorBindRw?: string[];
  /** commander's --no-sandbox: false when given. */
  sandbox?: boolean;
  /** --sandbox-user: forwarded to serve, which runs generators as this user when run as root. */
  sandboxUser?: string;
  batch?: boolean;
  batchPoll?: boolean;
  batchSize?: number;
  batchPollInterval?: number;
}

/** The ssh launcher for one `--host [N/][user@]host`, with the run's ssh settings. */
async function sshHost(o: WorkCliOptions, spec: string, genDir: string): Promise<ServeLauncher> {
  const { sshLauncher, controlDirFor } = await import('../transport/ssh-launcher.js');
  const at = spec.lastIndexOf('@');
  const user = at > 0 ? spec.slice(0, at) : undefined;
  const host = at > 0 ? spec.slice(at + 1) : spec;
  return sshLauncher(
    {
      host,
      options: o.sshOption ?? [],
      remoteCmd: o.remoteCmd,
      ...(user ? { user } : {}),
      ...(o.port ? { port: o.port } : {}),
      ...(o.identity ? { identity: o.identity } : {}),
      ...(o.sshConfig ? { configFile: o.sshConfig } : {}),
    },
    controlDirFor(genDir),
  );
}

/**
 * True when no job this run could take was left in queue/ as it stopped: none at all, or none of the
 * named keys (or the run's) — so after --drain emptied the queue it is true, not only when nothing was taken.
 */
function queueEmpty(store: Store, keys: readonly string[] | undefined): boolean {
  const queued = keysIn(store, 'queue');
  if (keys === undefined) return queued.length === 0;
  const left = new Set(queued);
  return !keys.some((k) => left.has(k));
}

/** Usage errors found before anything is claimed: flags that cannot work together or name nothing. */
function checkFlags(o: WorkCliOptions): void {
  const hosts = o.host ?? [];
  const launches = o.launch ?? [];
  if (hosts.length > 0 && launches.length > 0)
    throw new UsageError('EGJ_USAGE', '--host and --launch cannot be mixed in one run');
  if (hosts.length === 0 && (o.port || o.identity || o.sshOption || o.sshConfig))
    throw new UsageError('EGJ_USAGE', '--port, --identity, --ssh-option and --ssh-config need --host');
  if (launches.length === 0 && o.launchEnv?.length)
    throw new UsageError(
      'EGJ_USAGE',
      '--launch-env needs --launch (ssh and a local serve pass no such names)',
    );
  for (const name of o.launchEnv ?? []) checkLaunchEnvName(name);
  if (o.port !== undefined && o.port > 65535)
    throw new UsageError('EGJ_USAGE', `--port ${o.port}: a TCP port is 1 to 65535`);
  for (const [flag, file] of [
    ['--ssh-config', o.sshConfig],
    ['--identity', o.identity],
  ] as const) {
    if (file !== undefined && !pathExists(file))
      throw new UsageError('EGJ_USAGE', `${flag} ${file}: no such file`);
  }
}

/**
 * Where the run's serves start, each with its slot count: one per --host (ssh, with the run's ssh
 * settings) or --launch entry (with the --launch-env names), else a local serve. Shared by live
 * and shadow work, so a transport option is never dropped by one of them.
 */
export async function destinationsOf(
  o: WorkCliOptions,
  genDir: string,
): Promise<Array<{ launcher: ServeLauncher; slots: number }>> {
  checkFlags(o);
  const out: Array<{ launcher: ServeLauncher; slots: number }> = [];
  for (const raw of o.host ?? []) {
    const { slots, spec } = parseSlots(raw, o.concurrency, '--host');
    out.push({ launcher: await sshHost(o, spec, genDir), slots });
  }
  if ((o.launch ?? []).length > 0) {
    const { launchLauncher } = await import('../transport/launch.js');
    for (const raw of o.launch ?? []) {
      const { slots, spec } = parseSlots(raw, o.concurrency, '--launch');
      out.push({ launcher: launchLauncher(spec, o.launchEnv ?? []), slots });
    }
  }
  if (out.length === 0)
    out.push({ launcher: localLauncher({ repo: dirname(genDir) }), slots: o.concurrency });
  return out;
}

/** Whether serve runs on this machine, where its sandbox can be checked before anything is claimed. */
export function servesLocally(o: WorkCliOptions): boolean {
  return !o.host?.length && !o.launch?.length;
}

async function makePool(o: WorkCliOptions, genDir: string): Promise<Pool> {
  // a wait above 0 stays above 0 in whole milliseconds
  const backoffMs = Math.max(1, Math.round((o.hostBackoff ?? BACKOFF_BASE_MS / 1000) * 1000));
  const hosts = (await destinationsOf(o, genDir)).map((d) => new PoolHost(d.launcher, d.slots, backoffMs));
  return new Pool(hosts, Math.round((o.inDoubtAfter ?? DEFAULT_IN_DOUBT_AFTER_S) * 1000));
}

/** A receipt under the trust policy; an unsigned one refused says how the host comes to sign. */
function decodeSigned(bytes: Buffer, file: string, policy: ReceiptTrustPolicy): Receipt {
  try {
    return decodeReceiptWithPolicy(bytes, file, policy).receipt;
  } catch (err) {
    if (err instanceof RejectedError && err.code === 'EGJ_SIGNATURE_MISSING')
      throw new RejectedError(err.code, `${err.message}; ${SIGNING_HINT}`, err.file);
    throw err;
  }
}

function describe(o: JobOutcome, ms?: number): string {
  const k = o.key.slice(0, 12);
  const t = ms === undefined ? '' : ` (${(ms / 1000).toFixed(1)} s)`;
  switch (o.outcome) {
    case 'received':
      return `${k} received ${o.status}${o.cached ? ' (from the host cache)' : ''}${o.reason ? `: ${o.reason.split('\n')[0]}` : ''}${t}`;
    case 'recovered':
      return `${k} recovered: its receipt had landed before a crash`;
    case 'dead':
      return `${k} dead-lettered: ${o.reason}`;
    case 'requeued':
      return `${k} back in the queue: ${o.reason}`;
    case 'superseded':
      return `${k} stood down: ${o.reason}`;
  }
}

/** The named jobs (keys or prefixes), each of which must be waiting in the queue. */
function queuedKeys(store: Store, typed: readonly string[]): string[] {
  const keys = [...new Set(typed.map((t) => resolveKey(store, t)))];
  for (const key of keys) {
    const found = findJob(store, key);
    if (found?.state !== 'queue') {
      throw new UsageError(
        'EGJ_NOT_QUEUED',
        `${found?.file ?? key}: job ${key.slice(0, 12)} is ${found?.state ?? 'unknown'}, not queued${found?.state === 'received' ? ' (genjob retry KEY sends an aborted or rejected job back)' : ''}; nothing was claimed`,
      );
    }
  }
  return keys;
}

/**
 * The prefix of a progress line: `[done/total]` (for --drain also elapsed and ETA); with --watch,
 * whose total is open, `<time> [done]`.
 */
function progressLine(mode: 'once' | 'drain' | 'watch', total: number): (done: number) => string {
  const started = Date.now();
  const secs = (ms: number) => `${Math.round(ms / 1000)}s`;
  return (done) => {
    if (mode === 'watch') return `${new Date().toISOString()} [${done}]`;
    const of = Math.max(total, done);
    if (mode === 'once') return `[${done}/${of}]`;
    const elapsed = Date.now() - started;
    const eta = done < of ? `, eta ${secs((elapsed / done) * (of - done))}` : '';
    return `[${done}/${of}] elapsed ${secs(elapsed)}${eta}`;
  };
}

export async function work(o: WorkCliOptions): Promise<CommandResult> {
  let reapedFirst: Reaped[] = [];
  if (o.run !== undefined) {
    if ((o.keys ?? []).length > 0 || o.watch || o.batch || o.batchPoll)
      throw new UsageError(
        'EGJ_USAGE',
        "--run NAME works the run's queued jobs: not with keys, --watch or --batch",
      );
    // the run's jobs waiting in the queue (successors of reminted ones included), worked as named jobs;
    // a dead worker's jobs are reaped first, as any work does, so they are listed as queued too
    const { runKeys } = await import('../run/run-keys.js');
    const s = openStore(o);
    reapedFirst = await reapStale(s, o.leaseTtl);
    const queued = runKeys(s, o.run).current.filter((k) => findJob(s, k)?.state === 'queue');
    if (queued.length === 0) {
      const reapedLine =
        reapedFirst.length > 0 ? `\n${reapedFirst.length} stale lease(s) reaped back to the queue` : '';
      return {
        human: `nothing queued in run ${o.run}${reapedLine}`,
        json: { ok: true, run: o.run, outcomes: [], reaped: reapedFirst },
      };
    }
    o = { ...o, keys: queued };
  }
  // batch generation: submitting to and polling a provider's batch endpoint (see work-batch.ts)
  if (o.batch || o.batchPoll) return (await import('./work-batch.js')).workBatch(o);
  const chosen = o.keys ?? [];
  const modes = [o.once, o.drain, o.watch].filter(Boolean).length;
  if (modes === 0 && chosen.length > 0)
    o = { ...o, drain: true }; // `work KEY…` works those jobs
  else if (modes !== 1) throw new UsageError('EGJ_USAGE', 'choose exactly one of --once, --drain or --watch');
  if (chosen.length > 0 && o.watch) throw new UsageError('EGJ_USAGE', 'name jobs or --watch, not both');
  // a command no host would take is a usage error before anything is claimed or any host is reached
  const refused = o.generator === undefined ? null : generatorCommandProblem(o.generator);
  if (refused !== null) throw new UsageError('EGJ_USAGE', refused);
  const store = openStore(o);
  // the sandbox flags travel to serve as arguments; a local serve is checked here, before any claim
  const serveArgs = serveArgsOf(o);
  if (servesLocally(o) && o.sandbox !== false && o.generator && !o.generator.startsWith('builtin:'))
    await requireBwrap('genjob work', sandboxUser(o.sandboxUser));
  // a key the user typed must be queued now (a typo or a worked job is an error before anything is
  // claimed); a run's keys were listed as queued, and one another worker of the run claims meanwhile is
  // simply not ours to take: claimChosen skips it
  const keys = o.run !== undefined ? chosen : chosen.length > 0 ? queuedKeys(store, chosen) : undefined;
  const policy = loadTrustPolicy(store.root);
  // a local serve without a key would have every answer refused under pinned keys
  if (servesLocally(o)) requireLocalSigner(store.root, policy);
  const pool = await makePool(o, store.layout.gen);
  // a promotion pin is followed only when sealed under it (store/promotion.ts)
  const secret = await userSecret();
  const tty = process.stderr.isTTY === true && !o.quiet;
  const controller = new AbortController();
  const mode = o.once ? 'once' : o.drain ? 'drain' : 'watch';
  const watcher = mode === 'watch' ? await watchQueue(store, controller.signal) : undefined;
  /** Aborted by a second signal: the jobs in flight are cut now and go back to the queue. */
  const cutNow = new AbortController();
  const graceS = mode === 'watch' ? (o.grace ?? 30) : undefined;
  let stoppedBy: 'SIGINT' | 'SIGTERM' | undefined;
  /** The signal that cut the jobs in flight, when one did (else the grace period ended, --watch only). */
  let cutBy: 'SIGINT' | 'SIGTERM' | undefined;
  const onSignal = (sig: 'SIGINT' | 'SIGTERM') => {
    if (cutNow.signal.aborted) return;
    if (controller.signal.aborted) {
      notice(`${sig} again: stopping now; jobs in flight go back to the queue`);
      cutBy = sig;
      cutNow.abort();
      return;
    }
    stoppedBy = sig;
    const wait = graceS === undefined ? 'as long as they take' : `up to ${graceS} s (--grace)`;
    notice(
      `${sig}: no new claims; letting jobs in flight finish, ${wait}; ${sig === 'SIGINT' ? 'Ctrl-C' : sig} again stops now and puts them back in the queue`,
    );
    controller.abort();
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let done = 0;
  // --watch also polls open batches (work --batch), whose answers then count against --max-tokens
  const batches = mode === 'watch' ? await startBatchWatch(o, store) : undefined;
  // the queue's depth only feeds the progress lines: a --quiet run does not list the queue for it
  const queued = o.quiet || mode !== 'drain' ? 1 : keysIn(store, 'queue').length;
  const progress = progressLine(mode, keys?.length ?? queued);
  try {
    // every host is reached and asked about the generator before the first claim: a usage or
    // configuration error is exit 2 with nothing claimed, not an attempt spent
    // (without --generator, a job promoted from a shadow plane names its own: check the host with that)
    await preflight(pool, o.generator ?? anyPromotedGenerator(store, secret) ?? null, {
      args: serveArgs,
      maxAnswerBytes: 8 * 1024 * 1024 * 1024,
      helloTimeoutMs: 60_000,
      ...(o.quiet ? {} : { relayStderr: lineRelay }),
    });
    const summary = await runWork({
      store,
      mode,
      pool,
      generator: o.generator ?? null,
      // a request's limit is a whole number of ms above 0
      timeoutMs: Math.max(1, Math.round(o.timeout * 1000)),
      retryAborted: o.retryAborted === true,
      serveArgs,
      leaseTtlS: o.leaseTtl,
      maxAttempts: o.maxAttempts,
      decodeReceipt: (bytes, file) => decodeSigned(bytes, file, policy),
      userSecret: secret,
      notice,
      signal: controller.signal,
      ...(keys ? { keys } : {}),
      ...(graceS === undefined ? {} : { graceMs: Math.round(graceS * 1000) }),
      cutSignal: cutNow.signal,
      ...(watcher ? { waitForWork: watcher.next } : {}),
      ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
      ...(batches ? { extraTokens: batches.tokens } : {}),
      // serve's and the generator's output, each line named by its job (--quiet: not shown)
      ...(o.quiet ? {} : { relayStderr: lineRelay }),
      onStart: (key, destination) => {
        if (tty) notice(`${key.slice(0, 12)} working on ${destination}`);
      },
      onHostDown: (destination, reason, ms, retired) => {
        if (o.quiet) return;
        // --once ends after its job: no retry follows to announce
        const then = retired
          ? '; no more jobs go there this run'
          : mode === 'once'
            ? ''
            : `; retrying in ${Math.round(ms / 1000)} s`;
        notice(`${destination} is down (${reason.split('\n')[0]})${then}`);
      },
      onOutcome: (outcome, ms) => {
        done += 1;
        if (!o.quiet) notice(`${progress(done)} ${describe(outcome, ms)}`);
      },
    });
    const { outcomes } = summary;
    // a job cancelled under a worker is stood down on purpose, not a lost lease
    const stoodDown = outcomes.filter((x) => x.outcome === 'superseded' && !wasCancelled(store, x.key));
    const superseded = stoodDown.length > 0;
    const requeued = outcomes.filter((x) => x.outcome === 'requeued');
    // a job requeued and later received in the same run ended well
    // a job cut off by the end of the grace period is back in the queue by design, not unsettled
    const unsettled = requeued.filter(
      (r) =>
        !summary.cutAtShutdown.includes(r.key) &&
        !outcomes.some((x) => x.key === r.key && (x.outcome === 'received' || x.outcome === 'dead')),
    );
    const failed = outcomes.filter(
      (x) => x.outcome === 'received' && (x.status === 'aborted' || x.status === 'rejected'),
    );
    const exitCode =
      stoppedBy === 'SIGINT'
        ? EXIT.SIGINT
        : superseded
          ? EXIT.CONFLICT
          : unsettled.length > 0 || (o.failOnError && failed.length > 0)
            ? EXIT.REJECTED
            : EXIT.OK;
    // --quiet hides progress, never why a run did not end well: the jobs behind its exit code are named
    if (o.quiet && exitCode !== EXIT.OK && exitCode !== EXIT.SIGINT) {
      const last = new Map(unsettled.map((x) => [x.key, x])); // a job requeued twice: its last reason
      const why = superseded ? stoodDown : [...last.values(), ...(o.failOnError ? failed : [])];
      for (const x of why) notice(describe(x));
    }
    // a job requeued and taken again has several outcomes: count it once
    const taken = new Set(outcomes.map((x) => x.key)).size;
    const lines = outcomes.length === 0 ? ['queue empty'] : [`${taken} job(s) taken`];
    const reaped = [...reapedFirst, ...summary.reaped];
    if (reaped.length) lines.push(`${reaped.length} stale lease(s) reaped back to the queue`);
    if (summary.cutAtShutdown.length)
      lines.push(
        `${summary.cutAtShutdown.length} job(s) still in flight when ${cutBy === undefined ? 'the grace period ended' : `a second ${cutBy} stopped the run`}: requeued`,
      );
    if (summary.budgetSpent)
      lines.push(`token budget spent (${summary.tokens} ≥ ${o.maxTokens}): stopped claiming`);
    if (failed.length)
      lines.push(
        `${failed.length} job(s) ended aborted or rejected (genjob status --state received; genjob retry KEY)`,
      );
    if (unsettled.length)
      lines.push(
        `${unsettled.length} job(s) back in the queue after an unusable answer (see genjob show KEY)`,
      );
    const hosts = pool.hosts.map((h) => ({
      destination: h.destination,
      slots: h.slots,
      ...h.counts,
      ...(h.retired === undefined ? {} : { retired: h.retired }),
    }));
    if (pool.hosts.length > 1 || pool.hosts[0]?.destination !== 'local')
      for (const h of hosts)
        lines.push(
          `${h.destination}: ${h.received} received, ${h.requeued} requeued, ${h.dead} dead${h.retired ? ' (gave up on this host)' : ''}`,
        );
    return {
      exitCode,
      human: lines.join('\n'),
      json: {
        ok: exitCode === EXIT.OK,
        outcomes,
        reaped,
        tokens: summary.tokens,
        budget_spent: summary.budgetSpent,
        queue_empty: queueEmpty(store, keys),
        hosts,
        queue_listings: summary.queueListings,
      },
    };
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    await batches?.stop();
    await watcher?.close();
    // a session opened by the pre-claim check and never used (the run failed first) would keep us alive
    for (const h of pool.hosts) h.spare?.kill();
    await Promise.all(pool.hosts.map((h) => h.launcher.close()));
  }
}

async function startBatchWatch(o: WorkCliOptions, store: ReturnType<typeof openStore>) {
  const { watchBatches } = await import('../worker/batch-watch.js');
  const { batchContext } = await import('./work-batch.js');
  const say = (line: string) => {
    if (!o.quiet) notice(line);
  };
  return watchBatches(
    store,
    () => batchContext(store, o),
    Math.round((o.batchPollInterval ?? 60) * 1000),
    (s) => {
      for (const x of s.outcomes) say(`${x.key.slice(0, 12)} ${x.outcome} from a batch`);
      for (const p of s.problems) say(p);
    },
    (err) => say(`polling batches failed: ${err.message}`),
  );
}
