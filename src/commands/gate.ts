// genjob gate --run NAME: decide a run. Open (exit 75, EX_TEMPFAIL) until every intended key has a receipt
// or a dead letter, no key without a receipt holds a live lease, and every ok receipt has a current record
// for each --require-check; it says what it waits for. Closed, it prints the pass rate over the N intended
// keys, writes a gate record (src/run/gate-record.ts; signed with --sign-key or GENJOB_SIGN_KEY) and
// exits 0 (met) or 3 (not met). --wait evaluates again until the gate closes; --timeout only ends the
// wait (still 75): wall time never closes a gate.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { parseDuration } from '../core/duration.js';
import { UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { requireUserSecret } from '../remote/cache-mac.js';
import {
  decideGate,
  type GateDecision,
  type GatePolicy,
  parseMinPass,
  policyText,
  rateText,
} from '../run/gate-decision.js';
import { type CheckReader, gatherRun } from '../run/gate-gather.js';
import {
  buildGateRecord,
  newestGateSeq,
  newestSealedGate,
  type Signer,
  writeGate,
} from '../run/gate-record.js';
import { sealedRunIntent } from '../run/run-keys.js';
import type { Store } from '../store/store.js';
import { loadTrustPolicy } from '../trust/trust-file.js';

export interface GateOptions extends CommonOptions {
  run?: string;
  requireCheck?: string[];
  minPass?: string;
  maxFail?: string;
  allowFlaky?: boolean;
  wait?: boolean;
  timeout?: string;
  signKey?: string;
}

/** Rows of keys listed under a verdict or a wait before the rest are counted. */
const SHOWN = 20;
const POLL_MS = 1000;

export function gatePolicy(
  o: Pick<GateOptions, 'requireCheck' | 'minPass' | 'maxFail' | 'allowFlaky'>,
): GatePolicy {
  const minPass = o.minPass === undefined ? undefined : parseMinPass(o.minPass);
  if (minPass === null)
    throw new UsageError(
      'EGJ_USAGE',
      `--min-pass ${o.minPass}: a fraction from 0 to 1 (0.95) or a percentage (95%)`,
    );
  if (o.maxFail !== undefined && !/^\d{1,9}$/.test(o.maxFail))
    throw new UsageError('EGJ_USAGE', `--max-fail ${o.maxFail}: a whole number of keys, 0 or more`);
  const maxFail = o.maxFail === undefined ? null : Number(o.maxFail);
  const names = [...new Set(o.requireCheck ?? [])];
  return {
    requireChecks: names,
    // with neither bound given, every intended key must pass
    minPass: minPass ?? (maxFail === null ? { num: 1, den: 1 } : { num: 0, den: 1 }),
    maxFail,
    allowFlaky: o.allowFlaky === true,
  };
}

/**
 * The checks plane's reader for --require-check, as things are now: one context (HEAD's tree, each
 * checker's binding at HEAD, the pinned check keys) per evaluation, so every key of a decision is judged
 * against the same HEAD; each key's states are then what `checkStates` gives (src/check/check-state.ts).
 */
export async function checkReader(
  root: string,
  checkers: readonly string[],
): Promise<CheckReader | undefined> {
  if (checkers.length === 0) return undefined;
  const { checkContext, stateOf } = await import('../check/check-state.js');
  const ctx = await checkContext(root, checkers);
  return async (_root, key, names) =>
    names.map((c) => {
      const { record: _record, ignored: _ignored, ...state } = stateOf(ctx, key, c);
      return state;
    });
}

async function signer(o: GateOptions): Promise<Signer | undefined> {
  const file = o.signKey ?? (process.env.GENJOB_SIGN_KEY || undefined);
  if (file === undefined) return undefined;
  const { loadPrivateKey, keyIdOf } = await import('../trust/keys.js');
  const key = loadPrivateKey(file);
  return { key, keyid: keyIdOf(key) };
}

export async function gate(o: GateOptions): Promise<CommandResult> {
  if (o.run === undefined) throw new UsageError('EGJ_USAGE', 'name the run: genjob gate --run NAME');
  if (o.timeout !== undefined && !o.wait) throw new UsageError('EGJ_USAGE', '--timeout goes with --wait');
  const timeoutMs = o.timeout === undefined ? undefined : parseDuration(o.timeout, '--timeout');
  const policy = gatePolicy(o);
  const sign = await signer(o);
  const store = openStore(o);
  // the run must be one the user minted, and the record is sealed as the user's decision (apply --gated)
  const secret = await requireUserSecret();
  const trust = loadTrustPolicy(store.root);
  // a --require-check no checker is declared for: the gate would wait for its records forever
  await (await import('../check/declared-checkers.js')).refuseUndeclared(
    store,
    '--require-check',
    policy.requireChecks,
  );
  const started = Date.now();
  for (;;) {
    const run = sealedRunIntent(store, o.run, secret, 'nothing was decided');
    // read again at each evaluation: HEAD, a checker's definition or its records may have moved
    const readChecks = await checkReader(store.root, policy.requireChecks);
    const prior = newestSealedGate(store, run.ref, secret);
    const records = await gatherRun(store, run.intended, {
      checkers: policy.requireChecks,
      ...(readChecks ? { readChecks } : {}),
      trust,
      sealedBy: secret,
      ...(prior ? { prior } : {}),
    });
    const decision = decideGate(records, policy);
    if (decision.state === 'closed') {
      const record = buildGateRecord(run.ref, run.manifestSha256, policy, decision, records);
      const stored = writeGate(store, run.ref, record, sign, secret);
      return closedResult(store, run.ref.id, policy, decision, stored);
    }
    const elapsed = Date.now() - started;
    if (!o.wait || (timeoutMs !== undefined && elapsed >= timeoutMs)) {
      return openResult(
        run.ref.id,
        decision,
        records.length,
        o.wait === true,
        // only its number: a newest file that is no record (a branch's junk) must not turn 75 into 2
        newestGateSeq(store, run.ref),
      );
    }
    const pause = Math.min(POLL_MS, timeoutMs === undefined ? POLL_MS : Math.max(0, timeoutMs - elapsed));
    await new Promise((r) => setTimeout(r, pause));
  }
}

function openResult(
  id: string,
  d: Extract<GateDecision, { state: 'open' }>,
  total: number,
  waited: boolean,
  lastSeq: number | undefined,
): CommandResult {
  const lines = [`gate ${id}: open, waiting for ${d.waiting.length} of ${total} job(s):`];
  for (const w of d.waiting.slice(0, SHOWN)) lines.push(`  ${w.key.slice(0, 12)}  ${w.why}`);
  if (d.waiting.length > SHOWN)
    lines.push(`  … and ${d.waiting.length - SHOWN} more (--json lists every one)`);
  // a closed record stands only for the decision made now (gate-accepted.ts), and now the gate is open
  if (lastSeq !== undefined)
    lines.push(`gate record ${lastSeq} is stale: receipts or checks changed since it closed`);
  lines.push(
    waited
      ? '(exit 75: --timeout ended the wait; the gate is still open)'
      : '(exit 75: try again later, or wait for it with --wait)',
  );
  return {
    exitCode: EXIT.OPEN,
    human: lines.join('\n'),
    json: { ok: false, run: id, state: 'open', waiting: d.waiting, total },
  };
}

function closedResult(
  store: Store,
  id: string,
  policy: GatePolicy,
  d: Extract<GateDecision, { state: 'closed' }>,
  stored: ReturnType<typeof writeGate>,
): CommandResult {
  const failed = d.results.filter((r) => !r.pass);
  const rel = stored.file.slice(store.root.length + 1);
  const lines = [
    `gate ${id}: ${d.met ? 'met' : 'NOT met'}: ${rateText(d.passed, d.total, policy)} passed (${policyText(policy)}; ${failed.length} failed)`,
  ];
  for (const f of failed.slice(0, SHOWN)) lines.push(`  ${f.key.slice(0, 12)}  ${f.why}`);
  if (failed.length > SHOWN) lines.push(`  … and ${failed.length - SHOWN} more (--json lists every one)`);
  lines.push(
    `gate record ${stored.seq}: ${rel} (sha256 ${stored.sha256.slice(0, 12)}${stored.signed ? ', signed' : ''}${stored.fresh ? '' : ', unchanged since it was written'})`,
  );
  return {
    ...(d.met ? {} : { exitCode: EXIT.REJECTED }),
    human: lines.join('\n'),
    json: {
      ok: d.met,
      run: id,
      state: 'closed',
      verdict: d.met ? 'met' : 'not-met',
      passed: d.passed,
      total: d.total,
      rate: rateText(d.passed, d.total, policy),
      failed,
      record: {
        seq: stored.seq,
        file: stored.file,
        sha256: stored.sha256,
        signed: stored.signed,
        fresh: stored.fresh,
      },
    },
  };
}
