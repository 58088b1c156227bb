// One checker on one verified job, start to record: under a lock for the pair, find the record that
// speaks today; a current one is the answer unless --recheck asks for more attempts (an `error` is
// always run again). Otherwise run setup (or reuse its cached result) and the attempts — a command in
// a fresh confined copy of the scratch tree each, a judge as rounds of samples — stopping at the first
// pass, and publish one new record holding every attempt the verdict covers (those of the current
// record it extends, then these). Only logs (objects/) and a setup's cached result are kept before the
// record: a run killed midway leaves no record, and the next `check` takes back its scratch and lock.
// What only a judge or a setup needs (the judge's HTTP client, the diff, the user's secret) loads when one runs.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultCacheDir } from '../core/cache-dir.js';
import { sha256Hex } from '../core/sha256.js';
import { catFile } from '../git/cat-file.js';
import { repositoryDirs } from '../git/repository-dirs.js';
import type { SandboxPolicy } from '../sandbox/policy.js';
import { giveTree, type SandboxUser } from '../sandbox/sandbox-user.js';
import { publishExclusive, readIfExists } from '../store/durable.js';
import { lockNamed } from '../store/key-lock.js';
import type { Store } from '../store/store.js';
import type { Verified } from '../verify/verify-key.js';
import { boundFiles, dependedFiles } from './binding.js';
import type { CheckContext } from './check-state.js';
import type { Checker, CommandChecker, JudgeChecker } from './checker.js';
import { judgeEndpoint } from './judge-endpoint.js';
import {
  type AttemptRecord,
  buildStatement,
  CHECK_SCHEMA,
  type CheckFacts,
  decodeRecord,
  encodeRecord,
  type SetupRecord,
  type Signing,
  type Usage,
} from './record.js';
import { listRecords, writeRecord } from './record-store.js';
import { runConfined } from './run-confined.js';
import {
  checkoutCopy,
  outputFile,
  removeScratch,
  type Scratch,
  scratchDirs,
  setupCopy,
} from './scratch-tree.js';
import { findSetup, linkSetup, publishSetup, type SetupEntry, setupDigest } from './setup-cache.js';
import { speaking, staleness } from './staleness.js';
import { agreementOf, marksOf, type Outcome, outcomeOfRun, type Verdict, verdictOf } from './verdict.js';

/** Attempts that end in `error` before a run gives up (errors are retried, never counted as fails). */
export const MAX_ERRORS_PER_RUN = 2;
/** A judge is not sent a diff larger than this. */
export const MAX_JUDGE_DIFF_BYTES = 512 * 1024;
const TAIL_LINES = 10;

export interface RunCheckOptions {
  /** Attempts (rounds, for a judge) this run may make; default: the checker's `attempts` (a judge: 1). */
  attempts?: number;
  recheck: boolean;
  sandbox: 'bwrap' | 'none';
  /** Who checker commands run as: a check run as root drops to this user (sandbox-user.ts). */
  user?: SandboxUser;
  signing?: Signing;
  /** The file the signing key was read from: no checker sees it, wherever it lies. */
  signKeyFile?: string;
  env: NodeJS.ProcessEnv;
}

export interface CheckJob {
  v: Verified;
  /**
   * The job's scratch index, built once and shared by its checkers; `spare`: with a first copy checked out
   * for a run to take (the first caller decides).
   */
  scratch: (o: { spare: boolean }) => Promise<Scratch>;
}

export interface CheckOutcome {
  key: string;
  checker: string;
  verdict: Verdict;
  marks: string;
  record: string;
  /** False when a current record already answered and nothing ran. */
  ran: boolean;
  attempts: number;
  ms: number;
  /** The last lines of the last log (or the reason the last attempt gave), host-written text. */
  tail: string[];
}

/**
 * The sequence of a new record: one past the highest listed, at most the highest a record may hold. A
 * record of an old receipt is listed too, and one a branch commits (a job's key is known before it is
 * minted) may say 2^53 - 1: one past that is no record, so every later check of the job and checker
 * ended EGJ_CHECK_RECORD and its gate waited for good. At the cap, records tie and the later finish is newer.
 */
function nextSequence(listed: readonly number[]): number {
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, ...listed) + 1);
}

/** Keep the log among the objects; its digest, size and text (read once, as bytes: see core/read-text.ts). */
function storeLog(store: Store, file: string): { sha256: string | null; bytes: number; text: string } {
  const bytes = readIfExists(store, file);
  if (bytes === undefined) return { sha256: null, bytes: 0, text: '' };
  const sha256 = sha256Hex(bytes);
  publishExclusive(store, store.layout.object(sha256), bytes);
  return { sha256, bytes: bytes.length, text: bytes.toString('utf8') };
}

function tailOf(text: string): string[] {
  const trimmed = text.replace(/\n+$/, '');
  return trimmed === '' ? [] : trimmed.split('\n').slice(-TAIL_LINES);
}

export async function runCheck(
  ctx: CheckContext,
  job: CheckJob,
  checker: Checker,
  o: RunCheckOptions,
): Promise<CheckOutcome> {
  const { store } = ctx;
  const key = job.v.job.key;
  const lock = await lockNamed(store, `check-${key}-${checker.name}`, { waitMs: 0 });
  try {
    const started = Date.now();
    const listing = listRecords(store, key, checker.name, ctx.trusted);
    const today = {
      receipt_sha256: job.v.receiptSha256,
      binding_sha256: ctx.bindings.get(checker.name) ?? null,
      base_tree: ctx.baseTree,
    };
    const ordered = listing.records.map((r) => ({ ...r.facts, digest: r.digest, rec: r }));
    const prior = speaking(ordered, today);
    const current = prior !== undefined && staleness(prior, today) === undefined ? prior : undefined;
    if (current && !o.recheck && current.verdict !== 'error')
      return {
        key,
        checker: checker.name,
        verdict: current.verdict,
        marks: current.marks,
        record: current.digest,
        ran: false,
        attempts: current.attempts.length,
        ms: 0,
        tail: [],
      };
    const scratch = await job.scratch({ spare: checker.kind === 'command' });
    const carried = current?.attempts ?? [];
    const startedAt = new Date(started).toISOString();
    const run =
      checker.kind === 'command'
        ? await runCommand(ctx, scratch, job, checker, carried, o)
        : await runJudge(ctx, scratch, job, checker, carried, o);
    const attempts = [...carried, ...run.attempts];
    const outcomes = attempts.map((a) => a.outcome);
    const facts: CheckFacts = {
      schema: CHECK_SCHEMA,
      key,
      checker: checker.name,
      kind: checker.kind,
      receipt_sha256: job.v.receiptSha256,
      binding_sha256: today.binding_sha256!,
      base_tree: scratch.baseTree,
      result_tree: scratch.resultTree,
      verdict: verdictOf(outcomes),
      marks: marksOf(outcomes),
      sequence: nextSequence(listing.records.map((r) => r.facts.sequence)),
      previous: current?.digest ?? null,
      attempts,
      setup: run.setup,
      judge: run.judge,
      // unconfined, nothing keeps the network out: the record says so, as a receipt does
      sandbox:
        checker.kind === 'command'
          ? { kind: o.sandbox, network: o.sandbox === 'none' || checker.network }
          : null,
      started_at: startedAt,
      finished_at: new Date().toISOString(),
      machine: hostname(),
    };
    const bytes = encodeRecord(buildStatement(facts, job.v.receipt.outputs), o.signing);
    // never publish a record its readers would leave out: the older record would go on speaking
    decodeRecord(bytes, `the record of ${checker.name} for ${key.slice(0, 12)}`, []);
    const digest = writeRecord(store, key, checker.name, bytes);
    return {
      key,
      checker: checker.name,
      verdict: facts.verdict,
      marks: facts.marks,
      record: digest,
      ran: true,
      attempts: attempts.length,
      ms: Date.now() - started,
      tail: run.tail,
    };
  } finally {
    await lock.release();
  }
}

interface RunPart {
  attempts: AttemptRecord[];
  setup: SetupRecord | null;
  judge: CheckFacts['judge'];
  tail: string[];
}

/** Run attempts until `budget` of them gave evidence, the first pass, or too many errors. */
async function attemptLoop(
  first: number,
  budget: number,
  once: (n: number) => Promise<AttemptRecord>,
): Promise<AttemptRecord[]> {
  const made: AttemptRecord[] = [];
  let evidence = 0;
  let errors = 0;
  for (let n = first; evidence < budget && errors < MAX_ERRORS_PER_RUN; n++) {
    const a = await once(n);
    made.push(a);
    if (a.outcome === 'error') errors += 1;
    else evidence += 1;
    if (a.outcome === 'pass') break;
  }
  return made;
}

async function runCommand(
  ctx: CheckContext,
  scratch: Scratch,
  job: CheckJob,
  checker: CommandChecker,
  carried: readonly AttemptRecord[],
  o: RunCheckOptions,
): Promise<RunPart> {
  const { store } = ctx;
  const root = store.root;
  const key = job.v.job.key;
  // each checker of the job has its own part of the job's scratch directory (checks may run at once)
  const own = join('checkers', checker.name);
  const logs = scratchDirs(scratch.dir, `${own}/logs`, scratch.mode);
  const repository = await repositoryDirs(root);
  const policy = (binds: string[]): SandboxPolicy => ({
    kind: o.sandbox,
    network: checker.network,
    envNames: checker.env,
    binds,
    bindsRw: [],
    // the signing key and the user's cache directory (its secret seals the setup and report caches)
    hidden: [defaultCacheDir(o.env), ...(o.signKeyFile === undefined ? [] : [resolve(o.signKeyFile)])],
    // the repository itself shows only as the checker's copy: not its .gen/, .git/ or untracked files
    // (.env), which a system directory shows when it lives under /opt or /usr/src; from a linked
    // worktree, neither the main checkout's nor the common git directory (repository-dirs.ts)
    masked: repository,
    ...(o.user ? { user: o.user } : {}),
  });
  const jobEnv = (n: number | 'setup') => ({
    GENJOB_KEY: key,
    GENJOB_CHECK: checker.name,
    GENJOB_CHECK_ATTEMPT: String(n),
  });
  let setup: SetupRecord | null = null;
  let entry: SetupEntry | undefined;
  let tail: string[] = [];
  let setupDigestHex: string | undefined;
  // seals the setup cache: without one (no writable cache directory), setup runs for every check
  let secret: Buffer | null = null;
  if (checker.setup !== null) {
    // HEAD's tree with the pinned outputs: exactly the tree setup runs on (setupCopy)
    const pinned = await boundFiles(root, scratch.resultTree, checker);
    setupDigestHex = setupDigest(checker, scratch.baseTree, pinned, o.sandbox);
    secret = await (await import('../remote/cache-mac.js')).userSecret();
  }

  /** One confined run of `command` in a fresh copy of the tree, its log kept; the attempt it makes. */
  const runOnce = async (n: number, name: string, command: string, entry: SetupEntry | undefined) => {
    const startedAt = new Date().toISOString();
    // setup runs on HEAD plus the pinned outputs only: its result is shared with other jobs
    const copy =
      name === 'setup'
        ? await setupCopy(root, scratch, join(own, `${name}-${n}`), dependedFiles(checker).paths)
        : { ...(await checkoutCopy(root, scratch, join(own, `${name}-${n}`))), tracked: scratch.tracked };
    if (entry) linkSetup(entry, copy.tree);
    // the sandbox user's own copy to run in, made by git as genjob's user (its links to the entry too)
    if (o.user) giveTree(copy.runDir, o.user);
    const log = join(logs, `${name}-${n}.log`);
    const r = await runConfined({
      command,
      runDir: copy.runDir,
      workspace: copy.tree,
      jobEnv: jobEnv(name === 'setup' ? 'setup' : n),
      policy: policy(entry ? [entry.tree] : []),
      timeoutMs: checker.timeout_s * 1000,
      log,
    });
    const stored = storeLog(store, log);
    const { outcome, why } = outcomeOfRun(r);
    tail = tailOf(stored.text);
    const attempt: AttemptRecord = {
      n,
      outcome,
      exit_code: r.exitCode,
      signal: r.signal,
      timed_out: r.timedOut,
      ms: r.ms,
      log_sha256: stored.sha256,
      log_bytes: stored.bytes,
      why,
      started_at: startedAt,
    };
    return { attempt, tree: copy.tree, runDir: copy.runDir, tracked: copy.tracked };
  };

  /** Setup's result: the cached entry, or a run of it now; a failed setup is an error attempt. */
  const ensureSetup = async (n: number): Promise<{ entry?: SetupEntry; error?: AttemptRecord }> => {
    if (setupDigestHex === undefined) return {};
    // looked for once per checker and job: each look hashes the entry's files again
    entry ??= secret === null ? undefined : findSetup(store, setupDigestHex, secret);
    if (entry) {
      setup ??= {
        digest: setupDigestHex,
        cached: true,
        outcome: 'pass',
        exit_code: 0,
        ms: 0,
        log_sha256: null,
        why: null,
      };
      return { entry };
    }
    const ran = await runOnce(n, 'setup', checker.setup!, undefined);
    const a = ran.attempt;
    const ok = a.outcome === 'pass';
    setup = {
      digest: setupDigestHex,
      cached: false,
      outcome: ok ? 'pass' : 'error',
      exit_code: a.exit_code,
      ms: a.ms,
      log_sha256: a.log_sha256,
      why: a.why,
    };
    if (ok)
      entry = publishSetup(
        store,
        setupDigestHex,
        {
          tree: ran.tree,
          tracked: ran.tracked,
          staging: join(scratch.dir, own, `setup-entry-${n}`),
        },
        secret,
        o.user !== undefined,
      );
    removeScratch(ran.runDir);
    if (ok) return { entry };
    return {
      error: { ...a, outcome: 'error', why: `setup failed (${a.why ?? 'exit 0'}): ${checker.setup}` },
    };
  };

  const once = async (n: number): Promise<AttemptRecord> => {
    const s = await ensureSetup(n);
    if (s.error) return s.error;
    const { attempt, runDir } = await runOnce(n, 'run', checker.run, s.entry);
    removeScratch(runDir);
    if (attempt.why !== null && attempt.outcome !== 'fail') tail.push(`(${attempt.why})`);
    else if (attempt.timed_out) tail.push(`(timed out after ${checker.timeout_s} s)`);
    return attempt;
  };
  const attempts = await attemptLoop(carried.length + 1, o.attempts ?? checker.attempts, once);
  return { attempts, setup, judge: null, tail };
}

/** The judge's data: the instruction, the unified diff of HEAD → outputs, the rubric as HEAD holds it. */
async function judgeData(
  store: Store,
  scratch: Scratch,
  job: CheckJob,
  checker: JudgeChecker,
): Promise<{ rubric: string; instruction: string; diff: string } | string> {
  const outputs = job.v.receipt.outputs;
  const specs = [`${scratch.head}:${checker.rubric}`, ...outputs.map((x) => `${scratch.head}:${x.path}`)];
  const objects = await catFile(store.root, specs, { contents: true });
  const rubric = objects[0];
  if (rubric?.type !== 'blob' || !rubric.content) return `the rubric ${checker.rubric} is not a file at HEAD`;
  const changes = outputs.map((x, i) => {
    const before = objects[i + 1];
    const after = readFileSync(outputFile(store, job.v.job.key, x));
    return { path: x.path, before: before?.type === 'blob' ? (before.content ?? null) : null, after };
  });
  const { unifiedDiff } = await import('../apply/unified-diff.js');
  const diff = unifiedDiff(changes);
  if (Buffer.byteLength(diff) > MAX_JUDGE_DIFF_BYTES)
    return `the diff is ${Buffer.byteLength(diff)} bytes, more than a judge is sent (${MAX_JUDGE_DIFF_BYTES})`;
  return { rubric: rubric.content.toString('utf8'), instruction: job.v.job.instruction, diff };
}

async function runJudge(
  ctx: CheckContext,
  scratch: Scratch,
  job: CheckJob,
  checker: JudgeChecker,
  carried: readonly AttemptRecord[],
  o: RunCheckOptions,
): Promise<RunPart> {
  const data = await judgeData(ctx.store, scratch, job, checker);
  // a judge's modules (its HTTP client among them) load only when a judge runs: a command checker's check needs none
  const { judgeRound } = await import('./judge.js');
  const spent: Usage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
  let asked = carried.reduce((n, a) => n + (a.samples?.length ?? 0), 0);
  let tail: string[] = [];
  const once = async (n: number): Promise<AttemptRecord> => {
    const startedAt = new Date().toISOString();
    const t0 = Date.now();
    const round =
      typeof data === 'string'
        ? { samples: [], spent, outcome: 'error' as Outcome, why: data }
        : await judgeRound({ checker, data, env: o.env, firstIndex: asked });
    if (round.spent !== spent)
      for (const f of ['prompt_tokens', 'completion_tokens', 'requests'] as const) spent[f] += round.spent[f];
    asked += round.samples.length;
    tail = round.why
      ? [round.why]
      : round.samples.map(
          (s) =>
            `sample ${s.index}: ${s.vote}${s.score === null ? '' : ` (${s.score})`}: ${s.reason.split('\n')[0]}`,
        );
    return {
      n,
      outcome: round.outcome,
      exit_code: null,
      signal: null,
      timed_out: false,
      ms: Date.now() - t0,
      log_sha256: null,
      log_bytes: 0,
      why: round.why,
      started_at: startedAt,
      samples: round.samples,
    };
  };
  const attempts = await attemptLoop(carried.length + 1, o.attempts ?? 1, once);
  const last = [...carried, ...attempts].filter((a) => a.outcome !== 'error').at(-1);
  return {
    attempts,
    setup: null,
    judge: {
      model: checker.model,
      // the server asked, as the binding covers it: another endpoint's verdict is not this one's
      endpoint: judgeEndpoint(checker, o.env),
      samples: checker.samples,
      quorum: checker.quorum,
      agreement: agreementOf((last?.samples ?? []).map((s) => s.vote)),
      spent,
    },
    tail,
  };
}
