// Gather a report's model from .gen/: which jobs (all, a run's intended keys, or the keys named), each
// job's document, receipt facts, outputs and inputs (by digest, found or not), check standings (through
// check-source.ts), shadow answers and their compare verdicts, and the spend per generator and mode.
// A job whose files stamp as the cache remembers is taken from it (report-cache.ts). Reads only; a file
// that cannot be parsed shows as such on its row instead of failing the report.
import { join, sep } from 'node:path';
import { spendOfReceipts } from '../commands/status-spend.js';
import { GenjobError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { splitEnvelope } from '../core/receipt-peek.js';
import { sha256Hex } from '../core/sha256.js';
import { compareSides, liveSide, shadowSide } from '../shadow/compare.js';
import { ShadowStore } from '../shadow/shadow-store.js';
import { currentEpoch, readAttempt } from '../store/attempts.js';
import { deadJobs, deadReason } from '../store/dead-jobs.js';
import { peekRecord } from '../store/durable.js';
import { jobKeysIn, PRECEDENCE, resolveKey } from '../store/job-states.js';
import type { Store } from '../store/store.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { ReportBytes, type Seen } from './bytes.js';
import type { CheckSource } from './check-source.js';
import { hiddenAddedBy } from './diff-view.js';
import type {
  ReportCheck,
  ReportFile,
  ReportJob,
  ReportModel,
  ReportRun,
  ReportShadow,
  ReportState,
  ShadowVerdict,
  SpendRow,
} from './model.js';
import { STATE_ORDER } from './model.js';
import { receiptFacts } from './receipt-facts.js';
import { type CachedReportJob, type ReportCache, type Stamp, Stamps } from './report-cache.js';

export interface GatherOptions {
  /** Keys or unique prefixes; empty: every job. */
  keys?: readonly string[];
  /** A run already read through run-source.ts: its intended keys are the rows. */
  run?: ReportRun;
  checks: CheckSource;
  env?: NodeJS.ProcessEnv;
  /** What a report into the same directory gathered; left holding exactly the jobs gathered now. */
  cache?: ReportCache;
  /** The finder to read bytes through (give the same to writeReport: it keeps what was read). */
  bytes?: ReportBytes;
}

interface Where {
  state: ReportState;
  file: string;
  deadName?: string;
}

/**
 * Every key's state and job file: one listing per state directory (a crash leftover counts where it wins).
 * A job file not named by a key (a branch can commit `.gen/queue/EVIL.json`) is no job genjob minted: it
 * is left out, and named in `skipped` (`queue/EVIL.json`).
 */
function locate(store: Store, skipped: string[]): Map<string, Where> {
  const where = new Map<string, Where>();
  for (const state of PRECEDENCE) {
    // the job file as layout.jobFile names it (a listed name has no separator): no path.join per key
    const dir = store.layout.dir(state);
    for (const key of jobKeysIn(store, state, skipped))
      if (!where.has(key)) where.set(key, { state, file: `${dir}${sep}${key}.json` });
  }
  for (const d of deadJobs(store))
    if (!where.has(d.key))
      where.set(d.key, { state: 'dead', file: join(store.layout.dir('dead'), d.name), deadName: d.name });
  return where;
}

/** The job document of a job file or of an apply record (which embeds it), read loosely. */
function jobOf(bytes: Buffer | undefined): Pick<ReportJob, 'instruction' | 'inputs'> | null {
  if (!bytes) return null;
  try {
    const doc = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    const job = (typeof doc.job === 'object' && doc.job !== null ? doc.job : doc) as Record<string, unknown>;
    const inputs = Array.isArray(job.inputs) ? (job.inputs as Array<Record<string, unknown>>) : [];
    return {
      instruction: String(job.instruction ?? ''),
      inputs: inputs.map((i) => ({
        path: String(i.path),
        sha256: typeof i.sha256 === 'string' ? i.sha256 : null,
      })),
    };
  } catch {
    return null;
  }
}

function hostOf(store: Store, key: string, epoch: number): string | null {
  if (epoch <= 0) return null;
  try {
    return readAttempt(store, key, epoch)?.destination ?? null;
  } catch {
    return null; // an unreadable attempt record: the receipt's host stands in
  }
}

/**
 * One job from .gen/; `look` is told, before the read, of every file (or directory) read that can change
 * under the same name: a receipt (replaced after a retry), outputs, inputs, the attempts directory. Job
 * files, attempt records and dead reasons are created exclusively and never rewritten: known by name.
 */
function gatherJob(
  store: Store,
  key: string,
  at: Where | undefined,
  policy: ReceiptTrustPolicy,
  bytes: ReportBytes,
  look: Seen,
): CachedReportJob {
  const doc = at ? jobOf(peekRecord(store, at.file)) : null;
  const receiptFile = store.layout.receipt(key);
  if (at?.state !== 'dead') look(receiptFile);
  const receiptBytes = at?.state === 'dead' ? undefined : peekRecord(store, receiptFile);
  const facts = receiptBytes ? receiptFacts(receiptBytes, receiptFile, policy) : null;
  const receipt = facts?.receipt ?? null;
  if (!receipt?.epoch) look(store.layout.attemptsDir(key));
  const epoch = receipt?.epoch || currentEpoch(store, key);
  const inputs = doc?.inputs ?? [];
  const inputOf = new Map(inputs.map((i) => [i.path, i.sha256]));
  const files: ReportFile[] = (facts?.outputs ?? []).map((o) => {
    const input = inputOf.get(o.path) ?? null;
    const output = bytes.output(key, o.path, o.sha256, look);
    const before = input === null ? null : bytes.input(o.path, input, look);
    return {
      path: o.path,
      sha256: o.sha256,
      bytes: output.kind,
      input,
      inputFound: before === null || before.kind === 'ok',
      // as the page counts them: the input drawn against only when its bytes are at hand (job-bytes.ts)
      hiddenAdded:
        output.kind === 'ok' ? hiddenAddedBy(before?.kind === 'ok' ? before.bytes : null, output.bytes) : 0,
    };
  });
  return {
    key,
    state: at?.state ?? 'unknown',
    instruction: doc ? doc.instruction : at ? '(unreadable job file)' : '(no job file for this key)',
    inputs,
    dead: at?.deadName ? deadReason(store, at.deadName) : null,
    epoch,
    host: hostOf(store, key, epoch) ?? receipt?.host ?? null,
    receipt,
    receiptProblem: facts?.problem ?? null,
    files,
  };
}

/** A job from the cache when every file it read stamps the same (`hit`), else gathered again (and cached). */
function jobFrom(
  store: Store,
  key: string,
  at: Where | undefined,
  policy: ReceiptTrustPolicy,
  bytes: ReportBytes,
  cache: ReportCache | undefined,
  stamper: Stamps,
): { job: ReportJob; hit: boolean } {
  const where = at ? `${at.state}:${at.file}` : '-';
  const known = cache?.jobs.get(key);
  // an entry stamps at least the file the job was found by: one that stamps nothing vouches for nothing
  if (known && known.where === where && known.stamps.length > 0 && stamper.fresh(known.stamps))
    return { job: { ...known.job, checks: [], shadows: [] }, hit: true };
  const stamps = new Map<string, Stamp>();
  const job = gatherJob(store, key, at, policy, bytes, (file) => {
    if (!stamps.has(file)) stamps.set(file, stamper.of(file));
  });
  cache?.setJob(key, { where, stamps: [...stamps], job });
  return { job: { ...job, checks: [], shadows: [] }, hit: false };
}

/**
 * A job's check states: from the cache when the job itself was (its receipt is as it was), under the same
 * check context, with the records' files stamping the same; else asked of the checks plane (and cached).
 * A job that had no checks while no checker is declared and its records' files stamp the same has none
 * still, whatever the context: the context (which runs git) is not made for it.
 */
function checksFor(
  job: ReportJob,
  hit: boolean,
  source: CheckSource,
  cache: ReportCache | undefined,
  stamper: Stamps,
): Promise<void> | undefined {
  const key = job.key;
  const none = (list: readonly ReportCheck[]) => list.length === 0 && source.checkers.length === 0;
  const known = cache?.jobs.get(key)?.checks;
  const take = (list: ReportCheck[]) => {
    job.checks = list;
    cache?.taken(job);
  };
  const ask = async () => {
    const stamps = source.filesOf(key).map((file) => [file, stamper.of(file)] as [string, Stamp]);
    const list = await source.checksOf(key);
    if (cache) cache.setChecks(key, { context: none(list) ? '' : await source.context(), stamps, list });
    job.checks = list;
  };
  if (!hit || !known || !stamper.fresh(known.stamps)) return ask();
  // no check then and no checker now: answered here, without a promise per job (most reports' jobs)
  if (none(known.list)) {
    take(known.list);
    return undefined;
  }
  return source.context().then((context) => (context === known.context ? take(known.list) : ask()));
}

/** `read()`, or `instead()` when what it read is no record genjob could have written (any error but EGJ_IO). */
function unlessUnreadable<T>(read: () => T, instead: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof GenjobError) || err.exitCode === EXIT.IO) throw err;
    return instead();
  }
}

/** A shadow plane's answer for each key, beside the live one. */
function shadowsOf(store: Store, planes: readonly string[], jobs: readonly ReportJob[]): void {
  const keys = jobs.map((j) => j.key);
  for (const name of planes) {
    const plane = new ShadowStore(store, name);
    // a plane's file that is not a record (a link, a FIFO: a branch may commit .gen/shadow/) shows on its
    // job's row as unreadable; it failed the whole report. A disk that fails still ends it (EGJ_IO).
    const verdicts = new Map<string, ShadowVerdict>(
      unlessUnreadable(
        () => compareSides(liveSide(store), shadowSide(store, name), keys).jobs,
        () => [],
      ).map((c) => [c.key, c.verdict]),
    );
    for (const job of jobs) {
      const bytes = unlessUnreadable(
        () => plane.receipt(job.key),
        () => Buffer.from('{"status":"unreadable"}'),
      );
      let doc: Record<string, unknown> = {};
      try {
        if (bytes) doc = splitEnvelope(JSON.parse(bytes.toString('utf8')) as Record<string, unknown>).payload;
      } catch {
        doc = { status: 'unreadable' };
      }
      const outputs = Array.isArray(doc.outputs) ? (doc.outputs as Array<Record<string, unknown>>) : [];
      const shadowFiles = new Map(outputs.map((o) => [String(o.path), String(o.sha256)]));
      const liveFiles = new Map(job.files.map((f) => [f.path, f.sha256]));
      const usage = (doc.usage ?? {}) as Record<string, unknown>;
      const n = (v: unknown) => (Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : 0);
      const generator = (doc.generator ?? {}) as Record<string, unknown>;
      const shadow: ReportShadow = {
        plane: plane.plane,
        verdict: verdicts.get(job.key) ?? 'missing',
        digest: bytes ? sha256Hex(bytes) : null,
        status: bytes ? String(doc.status) : null,
        generator: typeof generator.command === 'string' ? generator.command : null,
        reason: typeof doc.reason === 'string' ? doc.reason : null,
        tokens: n(usage.prompt_tokens) + n(usage.completion_tokens),
        files: [...new Set([...liveFiles.keys(), ...shadowFiles.keys()])].sort().map((path) => ({
          path,
          live: liveFiles.get(path) ?? null,
          shadow: shadowFiles.get(path) ?? null,
        })),
      };
      job.shadows.push(shadow);
    }
  }
}

type UsageDoc = {
  usage: { prompt_tokens: number; completion_tokens: number; requests: number } | null;
  batch?: string;
};

/** `label`'s rows: its tokens per mode, priced by status-spend.ts (a judge's as interactive tokens are). */
function spendRows(label: string, docs: UsageDoc[], judge: boolean, env: NodeJS.ProcessEnv): SpendRow[] {
  const spend = spendOfReceipts(docs, env);
  const rows: SpendRow[] = [];
  for (const mode of ['interactive', 'batch'] as const) {
    const u = spend[mode];
    if (u.prompt_tokens + u.completion_tokens + u.requests === 0) continue;
    const price = spend.cost?.currency_per_million;
    const factor = mode === 'batch' ? (spend.cost?.batch_factor ?? 1) : 1;
    rows.push({
      generator: label,
      mode: judge ? 'judge' : mode,
      prompt: u.prompt_tokens,
      completion: u.completion_tokens,
      requests: u.requests,
      cost: price
        ? Math.round(((u.prompt_tokens * price.in + u.completion_tokens * price.out) / 1e6) * factor * 1e6) /
          1e6
        : null,
    });
  }
  return rows;
}

/**
 * Tokens per generator and mode (interactive, batch), from the receipts, and per judge model (mode
 * judge), from the check records, counted and priced as status-spend.ts does.
 */
function spendOf(jobs: readonly ReportJob[], env: NodeJS.ProcessEnv): SpendRow[] {
  const add = (into: Map<string, UsageDoc[]>, label: string, doc: UsageDoc) => {
    const list = into.get(label);
    if (list) list.push(doc);
    else into.set(label, [doc]);
  };
  const generators = new Map<string, UsageDoc[]>();
  const judges = new Map<string, UsageDoc[]>();
  for (const j of jobs) {
    const r = j.receipt;
    if (r)
      add(generators, r.generator, {
        usage: r.usage && {
          prompt_tokens: r.usage.prompt,
          completion_tokens: r.usage.completion,
          requests: r.usage.requests,
        },
        ...(r.batch ? { batch: r.batch } : {}),
      });
    for (const c of j.checks)
      if (c.spent)
        add(judges, c.spent.model, {
          usage: {
            prompt_tokens: c.spent.prompt,
            completion_tokens: c.spent.completion,
            requests: c.spent.requests,
          },
        });
  }
  const sorted = (m: Map<string, UsageDoc[]>) => [...m.keys()].sort();
  return [
    ...sorted(generators).flatMap((g) => spendRows(g, generators.get(g)!, false, env)),
    ...sorted(judges).flatMap((m) => spendRows(m, judges.get(m)!, true, env)),
  ];
}

export async function gatherReport(store: Store, o: GatherOptions): Promise<ReportModel> {
  const skipped: string[] = [];
  const where = locate(store, skipped);
  const typed = o.keys ?? [];
  const keys = o.run
    ? [...new Set(o.run.keys)]
    : typed.length > 0
      ? [...new Set(typed.map((k) => resolveKey(store, k, { dead: true })))]
      : [...where.keys()];
  const rank = (k: string) => STATE_ORDER.indexOf(where.get(k)?.state ?? 'unknown');
  keys.sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const policy = loadTrustPolicy(store.root);
  o.cache?.keepJobs(new Set(keys));
  const bytes = o.bytes ?? new ReportBytes(store);
  const stamper = new Stamps();
  const found = keys.map((k) => jobFrom(store, k, where.get(k), policy, bytes, o.cache, stamper));
  const jobs = found.map((f) => f.job);
  for (const { job, hit } of found) {
    const asked = checksFor(job, hit, o.checks, o.cache, stamper);
    if (asked) await asked;
  }
  const planes = ShadowStore.planes(store);
  shadowsOf(store, planes, jobs);
  const checkers = [...o.checks.checkers];
  for (const job of jobs)
    for (const c of job.checks) if (!checkers.includes(c.checker)) checkers.push(c.checker);
  return {
    title: o.run ? `run ${o.run.name}` : typed.length > 0 ? `${jobs.length} job(s)` : 'all jobs',
    run: o.run ?? null,
    checkers,
    planes: planes.map((p) => `shadow:${p}`),
    jobs,
    spend: spendOf(jobs, o.env ?? process.env),
    skipped,
  };
}
