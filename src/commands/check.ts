// genjob check [KEY...] [--all | --run NAME] [--checker NAME]... [--attempts N] [--recheck] [--concurrency N]:
// for each job (its receipt verified first: a refused one runs nothing, exit 3) and each checker,
// the record that speaks today, or a new one (src/check/run-check.ts). Exit 0 when every verdict is
// pass, 3 otherwise, 4 when HEAD does not hold a job's inputs. `check --list` prints each declared
// checker with its binding digest at HEAD. With --run, the run's received or applied jobs whose receipt is
// ok are checked (the ones its gate waits on for --require-check); its other jobs are counted.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { boundFiles } from '../check/binding.js';
import { type CheckContext, checkContext } from '../check/check-state.js';
import { type Checker, parseCheckers } from '../check/checker.js';
import type { Signing } from '../check/record.js';
import { type CheckOutcome, runCheck } from '../check/run-check.js';
import {
  CHECK_STAGING_PREFIX,
  headIds,
  prepareScratch,
  removeScratch,
  type Scratch,
} from '../check/scratch-tree.js';
import { SETUP_DIR } from '../check/setup-cache.js';
import {
  CONFIG_FILE,
  checkerConsentSettings,
  loadConfigFile,
  requireRepoConsent,
} from '../cli/config-file.js';
import { type Failure, failureLines, failureOf, worstExit, worstFailure } from '../cli/failures.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore, openStore } from '../cli/root.js';
import { SandboxUnavailableError, UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { requireBwrapOnPath } from '../sandbox/bwrap-probe.js';
import { type SandboxUser, sandboxUser, unreachable } from '../sandbox/sandbox-user.js';
import { readRecord } from '../store/durable.js';
import { keysIn, resolveKey } from '../store/job-states.js';
import type { Store } from '../store/store.js';
import { sweepDeadStaging } from '../store/sweep-staging.js';
import { keyIdOf, loadPrivateKey } from '../trust/keys.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { type Verified, verifyKey } from '../verify/verify-key.js';

export interface CheckOptions extends CommonOptions {
  keys: string[];
  all?: boolean;
  /** The run's jobs that have an ok receipt. */
  run?: string;
  checker?: string[];
  attempts?: number;
  recheck?: boolean;
  concurrency?: number;
  list?: boolean;
  signKey?: string;
  /** commander's --no-sandbox: false when given. */
  sandbox?: boolean;
  /** --sandbox-user: who checker commands run as when check runs as root (default nobody). */
  sandboxUser?: string;
}

/**
 * Refuse (EGJ_SANDBOX_UNAVAILABLE) a repository whose scratch copies the sandbox user cannot reach: each
 * run's copy and the setup cache live in its .gen/, and bwrap, started as that user, binds them from there.
 */
function requireReachable(store: Store, user: SandboxUser): void {
  mkdirSync(store.layout.staging, { recursive: true }); // as prepareScratch would: its mode counts
  for (const dir of [store.layout.staging, store.layout.dir(SETUP_DIR)]) {
    const blocked = unreachable(dir, user);
    if (blocked !== null)
      throw new SandboxUnavailableError(
        'genjob check',
        `checker commands run as the sandbox user ${user.label}, on copies made in ${dir}, and ${blocked} is not searchable by that user`,
        'check a repository every user may search the way to (not under /root or a private home), or pass --sandbox-user root to run the sandbox as root',
      );
  }
}

/** The declared checkers `names` picks (all when none is named); an unknown name is bad usage. */
export function chooseCheckers(
  declared: readonly Checker[],
  names: readonly string[] | undefined,
): Checker[] {
  if (declared.length === 0)
    throw new UsageError(
      'EGJ_CHECKER_UNKNOWN',
      'genjob.config.json declares no "checkers"; add one, e.g. "checkers": { "tests": { "run": "npm test" } }',
    );
  if (!names || names.length === 0) return [...declared];
  return [...new Set(names)].map((n) => {
    const c = declared.find((d) => d.name === n);
    if (!c)
      throw new UsageError(
        'EGJ_CHECKER_UNKNOWN',
        `--checker ${n}: genjob.config.json declares no such checker (it declares ${declared.map((d) => d.name).join(', ')})`,
      );
    return c;
  });
}

async function list(o: CheckOptions): Promise<CommandResult> {
  const root = lookStore(o).root;
  const ctx = await checkContext(root);
  const rows = await Promise.all(
    [...ctx.checkers.values()].map(async (c) => ({
      name: c.name,
      kind: c.kind,
      binding_sha256: ctx.bindings.get(c.name) ?? null,
      definition: c,
      files: ctx.baseTree === null ? [] : await boundFiles(root, ctx.baseTree, c),
    })),
  );
  const width = Math.max(4, ...rows.map((r) => r.name.length));
  const lines = rows.map((r) => {
    const what =
      r.definition.kind === 'command' ? r.definition.run : `${r.definition.judge} ${r.definition.model}`;
    return `${r.name.padEnd(width)}  ${r.kind.padEnd(7)}  ${r.binding_sha256 ? `sha256:${r.binding_sha256}` : '(no commit at HEAD)'}  ${what}`;
  });
  return {
    human: rows.length === 0 ? 'no checkers declared in genjob.config.json' : lines.join('\n'),
    json: { ok: true, checkers: rows },
  };
}

/** The signing key's file: --sign-key, else $GENJOB_SIGN_KEY. */
const signKeyFileOf = (o: CheckOptions) => o.signKey ?? (process.env.GENJOB_SIGN_KEY || undefined);

function signingOf(o: CheckOptions): Signing | undefined {
  const file = signKeyFileOf(o);
  if (file === undefined) return undefined;
  const key = loadPrivateKey(file);
  return { key, keyid: keyIdOf(key) };
}

/** Run `fn` over `items`, at most `limit` at once, results in input order. */
async function inPool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

function secondsOf(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

export async function check(o: CheckOptions): Promise<CommandResult> {
  if (o.list) {
    if (o.keys.length > 0 || o.all || o.run !== undefined)
      throw new UsageError('EGJ_USAGE', '--list takes no key, no --all and no --run');
    return list(o);
  }
  if (o.all && o.keys.length > 0) throw new UsageError('EGJ_USAGE', 'give keys or --all, not both');
  const store = openStore(o);
  const root = store.root;
  sweepDeadStaging(store, undefined, undefined, CHECK_STAGING_PREFIX);
  // one read of the config: the checkers that run are the ones the consent below is checked for
  const configFile = join(root, CONFIG_FILE);
  const config = loadConfigFile(configFile);
  const checkers = chooseCheckers(parseCheckers(config?.config.checkers, configFile), o.checker);
  // the repository's config may widen a checker's sandbox (network, the user's environment) only once allowed
  const widening = checkers.flatMap((c) => checkerConsentSettings(c.name, c));
  if (config) requireRepoConsent(config, widening);
  if (o.run !== undefined && (o.all || o.keys.length > 0))
    throw new UsageError('EGJ_USAGE', 'give keys, --all or --run NAME, not two of them');
  let keys: string[];
  let notOk = 0;
  if (o.run !== undefined) {
    const ofRun = await runJobsWithOkReceipts(store, o.run);
    keys = ofRun.keys;
    notOk = ofRun.others;
  } else if (o.all) keys = keysIn(store, 'received');
  else if (o.keys.length > 0) keys = [...new Set(o.keys.map((k) => resolveKey(store, k)))];
  else throw new UsageError('EGJ_USAGE', 'name a key (or a unique prefix of 4+ characters), or pass --all');
  const sandbox = o.sandbox === false ? 'none' : 'bwrap';
  // bubblewrap is probed only when a checker's run could not start (run-confined.ts), not before every
  // check: a host where it cannot start a sandbox is refused then, the whole command with it (below);
  // one without it at all is refused now, before anything is built
  const commands = checkers.some((c) => c.kind === 'command');
  if (sandbox === 'bwrap' && commands) requireBwrapOnPath('genjob check');
  // run as root, checker commands run as the sandbox user, in copies it must reach (sandbox-user.ts)
  const user = commands ? sandboxUser(o.sandboxUser) : undefined;
  if (user) requireReachable(store, user);
  const signing = signingOf(o);
  // HEAD is read once: every job is checked on this commit, and its records name this tree and the
  // checkers' bindings in it, whatever commits land while the checks run. Without one, a job that needs
  // a scratch tree fails as it is reached (a job whose record is current needs none).
  const head = headIds(root);
  const ctx: CheckContext = await checkContext(
    root,
    checkers.map((c) => c.name),
    { baseTree: (await head.catch(() => null))?.baseTree ?? null, checkers },
  );
  const policy = loadTrustPolicy(root);

  const failures: Array<Failure & { checker: string | null }> = [];
  const verified = new Map<string, Verified>();
  for (const key of keys) {
    try {
      verified.set(key, await verifyKey(store, key, policy));
    } catch (err) {
      failures.push({ ...failureOf(key, err), checker: null });
    }
  }
  const scratches = new Map<string, Promise<Scratch>>();
  const pairs = [...verified.values()].flatMap((v) => checkers.map((c) => ({ v, c })));
  const outcomes: Array<CheckOutcome | undefined> = [];
  // no sandbox can start here (the probe said so after a run could not start): the whole check is refused
  let unavailable: SandboxUnavailableError | undefined;
  try {
    outcomes.push(
      ...(await inPool(pairs, o.concurrency ?? 1, async ({ v, c }) => {
        if (unavailable) return undefined;
        const key = v.job.key;
        const scratch = ({ spare }: { spare: boolean }) => {
          if (!scratches.has(key))
            scratches.set(
              key,
              head.then((at) =>
                prepareScratch(store, at, v.job, v.receipt.outputs, {
                  spare,
                  searchable: user !== undefined,
                }),
              ),
            );
          return scratches.get(key)!;
        };
        try {
          return await runCheck(ctx, { v, scratch }, c, {
            attempts: o.attempts,
            recheck: o.recheck === true,
            sandbox,
            ...(user ? { user } : {}),
            signing,
            signKeyFile: signKeyFileOf(o),
            env: process.env,
          });
        } catch (err) {
          if (err instanceof SandboxUnavailableError) unavailable ??= err;
          else failures.push({ ...failureOf(key, err), checker: c.name });
          return undefined;
        }
      })),
    );
    if (unavailable) throw unavailable;
  } finally {
    for (const s of scratches.values()) await s.then((x) => removeScratch(x.dir)).catch(() => {});
  }
  const results = outcomes.filter((r): r is CheckOutcome => r !== undefined);
  const width = Math.max(4, ...checkers.map((c) => c.name.length));
  const lines: string[] = [];
  for (const r of results) {
    const note = r.ran ? '' : '  (recorded earlier; --recheck runs it again)';
    lines.push(
      `${r.key.slice(0, 12)}  ${r.checker.padEnd(width)}  ${r.verdict.padEnd(9)}  ${r.marks}  ${secondsOf(r.ms)}  record ${r.record.slice(0, 12)}${note}`,
    );
    if (r.verdict !== 'pass') for (const t of r.tail) lines.push(`    | ${t}`);
  }
  for (const f of failures)
    lines.push(`${f.key.slice(0, 12)}  ${(f.checker ?? '*').padEnd(width)}  not checked (${f.code})`);
  if (keys.length === 0)
    lines.push(
      `nothing to check (no received jobs${o.run === undefined ? '' : ` with an ok receipt in run ${o.run}`})`,
    );
  if (notOk > 0) lines.push(`${notOk} job(s) of run ${o.run} without an ok receipt (not checked)`);
  const red = results.filter((r) => r.verdict !== 'pass');
  const exitCode = worstExit([
    ...failures.map((f) => f.exitCode),
    ...(red.length > 0 ? [EXIT.REJECTED] : []),
  ]);
  const summary = `${red.length + failures.length} of ${pairs.length + failures.filter((f) => f.checker === null).length * checkers.length} check(s) did not pass`;
  if (red.length > 0 || failures.length > 0) lines.push(summary);
  // a verdict other than pass is named by the code apply --require-check would refuse it with
  const verdictCode = (v: string) =>
    v === 'flaky' ? 'EGJ_CHECK_FLAKY' : v === 'error' ? 'EGJ_CHECK_MISSING' : 'EGJ_CHECK_FAILED';
  const worst = worstFailure(
    [...failures, ...red.map((r) => ({ code: verdictCode(r.verdict), exitCode: EXIT.REJECTED }))],
    summary,
  );
  return {
    human: lines.join('\n'),
    ...(exitCode === EXIT.OK ? {} : { exitCode }),
    ...(failures.length > 0 ? { stderr: failureLines(failures) } : {}),
    json: {
      ok: exitCode === EXIT.OK,
      ...worst,
      results: results.map((r) => ({ ...r })),
      failed: failures.map(({ key, checker, code, message }) => ({ key, checker, code, message })),
    },
  };
}

/** The run's received or applied jobs whose receipt is ok, and how many of its jobs are not. */
async function runJobsWithOkReceipts(store: Store, run: string): Promise<{ keys: string[]; others: number }> {
  const { selectKeys } = await import('./verify.js');
  const { receiptSummary } = await import('./status.js');
  const { keys, skipped } = selectKeys(store, { run }, 'received', ['received', 'applied']);
  const ok = keys.filter((k) => receiptSummary(readRecord(store, store.layout.receipt(k))).status === 'ok');
  return { keys: ok, others: skipped + keys.length - ok.length };
}
