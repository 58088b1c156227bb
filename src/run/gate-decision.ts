// The run gate's decision, a pure function from the records gathered for a run's intended keys to
// open (and what it waits for) or closed, met or not met. It closes only when every key has a terminal
// outcome (a committed receipt, or a dead letter), no key without a receipt holds a live lease, and every
// ok receipt that verifies has a current, non-error record for each required checker. Closed, the pass
// rate is over the N intended keys: a key passes when its receipt is ok, verifies and has a current pass
// (or, allowed, flaky) record per required checker; anything else counts against it. No clock is read
// here, so wall time can never close a gate, and the same records always give the same verdict.
import type { GateRecord } from './gate-record.js';

/** A checker's verdict on one receipt, as the checks plane reports it (src/check/check-state.ts). */
export type CheckVerdict = 'pass' | 'fail' | 'flaky' | 'uncertain' | 'error';

export interface CheckView {
  checker: string;
  verdict: CheckVerdict | 'missing';
  /** The record's receipt digest, binding digest and base tree are today's. */
  current: boolean;
  recordDigest?: string;
}

export type Outcome =
  /** Not yet terminal: queued, running, received but its receipt not in place, or nowhere in the store. */
  | { kind: 'pending'; state: 'queue' | 'running' | 'received' | 'unknown' }
  /** `problem` is why an ok receipt does not verify (null when it does; not asked for other statuses). */
  | { kind: 'receipt'; status: string; receiptDigest: string | null; problem: string | null }
  | { kind: 'dead'; name: string; code: string; reason: string }
  /** Its material pruned by `genjob gc` (its tombstone's state, date and receipt digest). */
  | { kind: 'pruned'; state: string; prunedOn: string; receiptDigest: string | null };

export interface KeyRecords {
  /** The intended key (as sealed in the run). */
  key: string;
  /** The job that stands for it now (its successor after a remint; else the key itself). */
  current: string;
  outcome: Outcome;
  /** A lease whose heartbeat is within its TTL and whose holder is not known to be gone. */
  liveLease: boolean;
  /** The required checkers' states for this key's receipt (only read for an ok receipt that verifies). */
  checks: readonly CheckView[];
  /**
   * For a key whose material gc pruned: the user's newest gate record's entry for this very job. The
   * evidence is gone, so that judgement stands, its evidence as recorded (the record stays current).
   */
  carried?: GateRecord['keys'][number];
}

export interface GatePolicy {
  requireChecks: readonly string[];
  /** The least pass rate, as a fraction num/den (0.95 = 95/100), compared in integers. */
  minPass: { num: number; den: number };
  /** The most keys that may fail; null for no limit. */
  maxFail: number | null;
  allowFlaky: boolean;
}

export interface Waiting {
  key: string;
  why: string;
}

export interface KeyResult {
  key: string;
  pass: boolean;
  /** Why it did not pass (empty when it did). */
  why: string;
}

export type GateDecision =
  | { state: 'open'; waiting: Waiting[] }
  | { state: 'closed'; met: boolean; passed: number; total: number; results: KeyResult[] };

const PENDING: Record<Extract<Outcome, { kind: 'pending' }>['state'], string> = {
  queue: 'queued: no worker has taken it yet',
  running: 'running: its attempt has not delivered yet',
  received: 'received, its receipt not yet in place',
  unknown: 'not in the store (mint it again with the same command)',
};

type Judged = { wait: string } | { fail: string } | { pass: true };
type CheckJudged = { checker: string; wait: string } | { checker: string; verdict: CheckVerdict };

/** A required checker's verdict on the key, or why the gate must wait for one. */
function checkFor(r: KeyRecords, checker: string): CheckJudged {
  const c = r.checks.find((x) => x.checker === checker);
  if (c === undefined || c.verdict === 'missing') return { checker, wait: `no ${checker} record yet` };
  if (!c.current) return { checker, wait: `its ${checker} record is stale` };
  if (c.verdict === 'error') return { checker, wait: `${checker} could not run (error): check it again` };
  return { checker, verdict: c.verdict };
}

/** One key: the gate waits for it, it fails (and why), or it passes. */
function judge(r: KeyRecords, policy: GatePolicy): Judged {
  const o = r.outcome;
  if (o.kind === 'pending') return { wait: PENDING[o.state] };
  if (o.kind === 'pruned') {
    if (r.carried !== undefined) return r.carried.pass ? { pass: true } : { fail: r.carried.why ?? '' };
    // no decision of the user's judged it before its evidence went: it cannot pass now
    return { fail: `${o.state}, then pruned by genjob gc on ${o.prunedOn} before a gate judged it` };
  }
  if (o.kind === 'dead')
    return r.liveLease ? { wait: 'an attempt still holds a live lease' } : { fail: `dead: ${o.code}` };
  if (o.status !== 'ok') return { fail: `receipt ${o.status}` };
  if (o.problem !== null) return { fail: `does not verify: ${o.problem}` };
  const checks = policy.requireChecks.map((c) => checkFor(r, c));
  const waits = checks.flatMap((c) => ('wait' in c ? [c.wait] : []));
  if (waits.length > 0) return { wait: waits.join('; ') };
  const bad = checks.find(
    (c) => 'verdict' in c && c.verdict !== 'pass' && !(c.verdict === 'flaky' && policy.allowFlaky),
  );
  return bad && 'verdict' in bad ? { fail: `${bad.checker}: ${bad.verdict}` } : { pass: true };
}

export function decideGate(records: readonly KeyRecords[], policy: GatePolicy): GateDecision {
  const judged = records.map((r) => ({ key: r.key, j: judge(r, policy) }));
  const waiting = judged.flatMap(({ key, j }) => ('wait' in j ? [{ key, why: j.wait }] : []));
  if (waiting.length > 0) return { state: 'open', waiting };
  const results = judged.map(({ key, j }) =>
    'fail' in j ? { key, pass: false, why: j.fail } : { key, pass: true, why: '' },
  );
  const passed = results.filter((r) => r.pass).length;
  const total = records.length;
  const met =
    passed * policy.minPass.den >= policy.minPass.num * total &&
    (policy.maxFail === null || total - passed <= policy.maxFail);
  return { state: 'closed', met, passed, total, results };
}

/**
 * `57/60 = 95.0%`: the rate cut (never rounded up) to the decimals the policy's minimum needs (at least
 * one), so a rate shown as met is met and one shown as missed is below the minimum as shown.
 */
export function rateText(passed: number, total: number, policy?: GatePolicy): string {
  return `${passed}/${total} = ${percentText(passed, total, policy === undefined ? 1 : exactDecimals(policy.minPass))}`;
}

/** The decimals that write num/den as a percentage exactly (at least one): `66.67%` needs two. */
function exactDecimals(p: { num: number; den: number }): number {
  let d = 1;
  // parseMinPass's den is 10^k or 10^k × 100, so six decimals always suffice for what it parses
  while (d < 6 && (BigInt(p.num) * 100n * 10n ** BigInt(d)) % BigInt(p.den) !== 0n) d++;
  return d;
}

/** `95.0%`: num/den as a percentage to `decimals` places, cut (a rate) or rounded up (a minimum). */
function percentText(num: number, den: number, decimals: number, up = false): string {
  const scale = 10n ** BigInt(decimals);
  const n = BigInt(num) * 100n * scale;
  const d = BigInt(den === 0 ? 1 : den);
  const units = num === 0 ? 0n : (n + (up ? d - 1n : 0n)) / d;
  return `${units / scale}.${String(units % scale).padStart(decimals, '0')}%`;
}

/** A policy in words (`min 95.0%, max fail 2, checks tests`), as `genjob gate` and a report say it. */
export function policyText(p: GatePolicy): string {
  return [
    `min ${percentText(p.minPass.num, p.minPass.den, exactDecimals(p.minPass), true)}`,
    ...(p.maxFail === null ? [] : [`max fail ${p.maxFail}`]),
    ...(p.requireChecks.length > 0
      ? [`checks ${p.requireChecks.join(', ')}${p.allowFlaky ? ' (flaky allowed)' : ''}`]
      : []),
  ].join(', ');
}

/** Parse a --min-pass value: a fraction 0..1 (`0.95`) or a percentage (`95%`), kept exact as num/den. */
export function parseMinPass(text: string): { num: number; den: number } | null {
  const m = /^(\d{1,3})(?:\.(\d{1,6}))?(%)?$/.exec(text.trim());
  if (!m) return null;
  const frac = m[2] ?? '';
  const den = 10 ** frac.length * (m[3] ? 100 : 1);
  const num = Number(m[1]) * 10 ** frac.length + Number(frac); // Number('') is 0
  return num > den ? null : { num, den };
}
