// The run gate's decision (src/run/gate-decision.ts): open while any key is pending, a dead key holds a
// live lease, or an ok receipt lacks a current non-error record of a required checker; closed, the pass
// rate over every intended key against --min-pass and --max-fail. Tables for each rule, then properties:
// the verdict is a function of the records alone (any order of keys gives the same one), and a gate
// never closes while a key is pending or a key without a receipt holds a live lease.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CheckView,
  decideGate,
  type GatePolicy,
  type KeyRecords,
  type Outcome,
  parseMinPass,
  policyText,
  rateText,
} from '../../src/run/gate-decision.js';

const ALL: GatePolicy = { requireChecks: [], minPass: { num: 1, den: 1 }, maxFail: null, allowFlaky: false };
const TESTS: GatePolicy = { ...ALL, requireChecks: ['tests'] };
const ok: Outcome = { kind: 'receipt', status: 'ok', receiptDigest: 'r'.repeat(64), problem: null };

function rec(key: string, outcome: Outcome, extra: Partial<KeyRecords> = {}): KeyRecords {
  return { key, current: key, outcome, liveLease: false, checks: [], ...extra };
}
const check = (verdict: CheckView['verdict'], current = true, checker = 'tests'): CheckView => ({
  checker,
  verdict,
  current,
  recordDigest: `${checker}-${verdict}`,
});

describe('an open gate says what it waits for', () => {
  it.each([
    { state: 'queue' as const, why: 'queued: no worker has taken it yet' },
    { state: 'running' as const, why: 'running: its attempt has not delivered yet' },
    { state: 'received' as const, why: 'received, its receipt not yet in place' },
    { state: 'unknown' as const, why: 'not in the store (mint it again with the same command)' },
  ])('waits for a $state key', ({ state, why }) => {
    expect(decideGate([rec('a', ok), rec('b', { kind: 'pending', state })], ALL)).toEqual({
      state: 'open',
      waiting: [{ key: 'b', why }],
    });
  });

  it('waits for a dead key whose attempt still holds a live lease, not for one without', () => {
    const dead: Outcome = { kind: 'dead', name: 'k.job.1-a', code: 'EGJ_CANCELLED', reason: 'x' };
    expect(decideGate([rec('a', dead, { liveLease: true })], ALL)).toEqual({
      state: 'open',
      waiting: [{ key: 'a', why: 'an attempt still holds a live lease' }],
    });
    expect(decideGate([rec('a', dead)], ALL)).toMatchObject({ state: 'closed', passed: 0 });
  });

  it('does not wait for a lease on a key whose receipt is committed', () => {
    expect(decideGate([rec('a', ok, { liveLease: true })], ALL)).toMatchObject({
      state: 'closed',
      passed: 1,
    });
  });

  it.each([
    { name: 'no record of the checker', checks: [], why: 'no tests record yet' },
    { name: 'a record marked missing', checks: [check('missing')], why: 'no tests record yet' },
    { name: 'a stale pass', checks: [check('pass', false)], why: 'its tests record is stale' },
    { name: 'a stale fail', checks: [check('fail', false)], why: 'its tests record is stale' },
    { name: 'an error', checks: [check('error')], why: 'tests could not run (error): check it again' },
    { name: 'another checker only', checks: [check('pass', true, 'lint')], why: 'no tests record yet' },
  ])('waits for an ok receipt with $name', ({ checks, why }) => {
    expect(decideGate([rec('a', ok, { checks })], TESTS)).toEqual({
      state: 'open',
      waiting: [{ key: 'a', why }],
    });
  });

  it('names every checker it waits for on one key', () => {
    const policy = { ...ALL, requireChecks: ['tests', 'lint', 'review'] };
    const d = decideGate([rec('a', ok, { checks: [check('error'), check('pass', true, 'lint')] })], policy);
    expect(d).toEqual({
      state: 'open',
      waiting: [{ key: 'a', why: 'tests could not run (error): check it again; no review record yet' }],
    });
  });

  it('asks no check of a receipt that is not ok or does not verify', () => {
    const d = decideGate(
      [
        rec('a', { kind: 'receipt', status: 'aborted', receiptDigest: null, problem: null }),
        rec('b', { ...ok, problem: 'EGJ_ARTIFACT_DRIFT: x' }),
      ],
      TESTS,
    );
    expect(d).toMatchObject({ state: 'closed', passed: 0, total: 2 });
  });
});

describe('a closed gate counts every intended key', () => {
  it.each([
    { name: 'an aborted receipt', outcome: { ...ok, status: 'aborted' }, why: 'receipt aborted' },
    { name: 'a rejected receipt', outcome: { ...ok, status: 'rejected' }, why: 'receipt rejected' },
    {
      name: 'an ok receipt that does not verify',
      outcome: { ...ok, problem: 'EGJ_X: y' },
      why: 'does not verify: EGJ_X: y',
    },
    {
      name: 'a dead letter',
      outcome: { kind: 'dead', name: 'n', code: 'EGJ_ATTEMPTS_EXHAUSTED', reason: 'r' } as Outcome,
      why: 'dead: EGJ_ATTEMPTS_EXHAUSTED',
    },
  ])('fails $name, saying why', ({ outcome, why }) => {
    expect(decideGate([rec('a', outcome)], ALL)).toEqual({
      state: 'closed',
      met: false,
      passed: 0,
      total: 1,
      results: [{ key: 'a', pass: false, why }],
    });
  });

  it.each([
    { verdict: 'pass' as const, allowFlaky: false, pass: true, why: '' },
    { verdict: 'fail' as const, allowFlaky: false, pass: false, why: 'tests: fail' },
    { verdict: 'uncertain' as const, allowFlaky: false, pass: false, why: 'tests: uncertain' },
    { verdict: 'flaky' as const, allowFlaky: false, pass: false, why: 'tests: flaky' },
    { verdict: 'flaky' as const, allowFlaky: true, pass: true, why: '' },
    { verdict: 'fail' as const, allowFlaky: true, pass: false, why: 'tests: fail' },
  ])(
    'a current $verdict record (flaky allowed: $allowFlaky) passes: $pass',
    ({ verdict, allowFlaky, pass, why }) => {
      const d = decideGate([rec('a', ok, { checks: [check(verdict)] })], { ...TESTS, allowFlaky });
      expect(d).toMatchObject({ state: 'closed', met: pass, results: [{ key: 'a', pass, why }] });
    },
  );

  it('names the first required checker that did not pass', () => {
    const policy = { ...ALL, requireChecks: ['tests', 'lint'] };
    const d = decideGate([rec('a', ok, { checks: [check('pass'), check('fail', true, 'lint')] })], policy);
    expect(d).toMatchObject({ results: [{ key: 'a', pass: false, why: 'lint: fail' }] });
  });

  it('meets --min-pass exactly at the bound, in integers (57/60 against 0.95)', () => {
    const keys = (passing: number) =>
      Array.from({ length: 60 }, (_, i) => rec(`k${i}`, i < passing ? ok : { ...ok, status: 'aborted' }));
    const policy = { ...ALL, minPass: { num: 95, den: 100 } };
    expect(decideGate(keys(57), policy)).toMatchObject({ state: 'closed', met: true, passed: 57, total: 60 });
    expect(decideGate(keys(56), policy)).toMatchObject({ state: 'closed', met: false, passed: 56 });
  });

  it('meets --max-fail up to its bound, and both bounds must hold', () => {
    const two = [rec('a', ok), rec('b', ok), rec('c', { ...ok, status: 'aborted' })];
    const none = { ...ALL, minPass: { num: 0, den: 1 } };
    expect(decideGate(two, { ...none, maxFail: 1 })).toMatchObject({ met: true });
    expect(decideGate(two, { ...none, maxFail: 0 })).toMatchObject({ met: false });
    expect(decideGate(two, { ...none, maxFail: null })).toMatchObject({ met: true });
    expect(decideGate(two, { ...ALL, maxFail: 5 })).toMatchObject({ met: false }); // 2/3 under 100%
  });

  it('closes an empty set of keys as met (0 of 0)', () => {
    expect(decideGate([], ALL)).toEqual({ state: 'closed', met: true, passed: 0, total: 0, results: [] });
  });
});

describe('the rate as printed', () => {
  it.each([
    { passed: 57, total: 60, text: '57/60 = 95.0%' },
    { passed: 2, total: 3, text: '2/3 = 66.6%' },
    { passed: 1, total: 1, text: '1/1 = 100.0%' },
    { passed: 1999, total: 2000, text: '1999/2000 = 99.9%' },
    { passed: 0, total: 0, text: '0/0 = 0.0%' },
  ])('$passed of $total is $text (cut, never rounded up)', ({ passed, total, text }) => {
    expect(rateText(passed, total)).toBe(text);
  });
});

describe('the policy in words', () => {
  it.each([
    { policy: ALL, text: 'min 100.0%' },
    { policy: { ...ALL, minPass: { num: 955, den: 1000 }, maxFail: 0 }, text: 'min 95.5%, max fail 0' },
    { policy: { ...TESTS, requireChecks: ['tests', 'judge'] }, text: 'min 100.0%, checks tests, judge' },
    {
      policy: { ...TESTS, minPass: { num: 2, den: 3 }, maxFail: 2, allowFlaky: true },
      text: 'min 66.666667%, max fail 2, checks tests (flaky allowed)',
    },
    { policy: { ...ALL, minPass: { num: 6667, den: 10000 } }, text: 'min 66.67%' },
    { policy: { ...ALL, minPass: { num: 123456, den: 100000000 } }, text: 'min 0.123456%' },
  ])('$text', ({ policy, text }) => {
    expect(policyText(policy)).toBe(text);
  });

  // the minimum as given, the rate cut to as many places: `NOT met: 2/3 = 66.6% (min 66.6%)` read as met
  it.each([
    { min: '66.67%', passed: 2, total: 3, rate: '2/3 = 66.66%', shown: 'min 66.67%', met: false },
    { min: '66.66%', passed: 2, total: 3, rate: '2/3 = 66.66%', shown: 'min 66.66%', met: true },
    { min: '0.6667', passed: 2, total: 3, rate: '2/3 = 66.66%', shown: 'min 66.67%', met: false },
    { min: '95%', passed: 57, total: 60, rate: '57/60 = 95.0%', shown: 'min 95.0%', met: true },
  ])('--min-pass $min with $passed of $total: $rate, $shown', ({ min, passed, total, rate, shown, met }) => {
    const policy = { ...ALL, minPass: parseMinPass(min)! };
    expect(rateText(passed, total, policy)).toBe(rate);
    expect(policyText(policy)).toBe(shown);
    const aborted: Outcome = { ...ok, status: 'aborted' };
    const records = Array.from({ length: total }, (_, i) => rec(`k${i}`, i < passed ? ok : aborted));
    expect(decideGate(records, policy)).toMatchObject({ state: 'closed', met });
  });
});

describe('--min-pass', () => {
  it.each([
    { text: '0.95', want: { num: 95, den: 100 } },
    { text: '95%', want: { num: 95, den: 100 } },
    { text: '95.5%', want: { num: 955, den: 1000 } },
    { text: '1', want: { num: 1, den: 1 } },
    { text: '0', want: { num: 0, den: 1 } },
    { text: '100%', want: { num: 100, den: 100 } },
    { text: ' 0.5 ', want: { num: 5, den: 10 } },
    { text: '1.5', want: null },
    { text: '101%', want: null },
    { text: '0.1234567', want: null },
    { text: '1000%', want: null },
    { text: '.5', want: null },
    { text: 'half', want: null },
    { text: '-0.5', want: null },
    { text: '0.5x', want: null },
  ])('reads $text as $want', ({ text, want }) => {
    expect(parseMinPass(text)).toEqual(want);
  });
});

// ---- properties ----

const outcome: fc.Arbitrary<Outcome> = fc.oneof(
  fc
    .constantFrom(...(['queue', 'running', 'received', 'unknown'] as const))
    .map((state) => ({ kind: 'pending' as const, state })),
  fc.record({
    kind: fc.constant('receipt' as const),
    status: fc.constantFrom('ok', 'ok', 'aborted', 'rejected'),
    receiptDigest: fc.constant('d'),
    problem: fc.constantFrom(null, null, 'EGJ_ARTIFACT_DRIFT: x'),
  }),
  fc.record({
    kind: fc.constant('dead' as const),
    name: fc.constant('n'),
    code: fc.constant('EGJ_DROPPED'),
    reason: fc.constant('r'),
  }),
);
// one state per checker, as the checks plane gives them (two of one name would be a model no reader makes)
const checks = fc.uniqueArray(
  fc.record({
    checker: fc.constantFrom('tests', 'lint'),
    verdict: fc.constantFrom(...(['pass', 'fail', 'flaky', 'uncertain', 'error', 'missing'] as const)),
    current: fc.boolean(),
  }),
  { maxLength: 2, selector: (c) => c.checker },
);
const records = fc
  .array(fc.record({ outcome, liveLease: fc.boolean(), checks }), { maxLength: 12 })
  .map((rs) => rs.map((r, i) => ({ key: `k${i}`, current: `k${i}`, ...r })));
const policy: fc.Arbitrary<GatePolicy> = fc.record({
  requireChecks: fc.subarray(['tests', 'lint']),
  minPass: fc.integer({ min: 0, max: 100 }).map((n) => ({ num: n, den: 100 })),
  maxFail: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }),
  allowFlaky: fc.boolean(),
});

describe('the decision as a function of the records', () => {
  it('gives the same verdict and count whatever the order of the keys', () => {
    fc.assert(
      fc.property(records, policy, fc.integer(), (rs, p, seed) => {
        const shuffled = [...rs].sort(
          (a, b) => ((a.key.charCodeAt(1) * seed) % 7) - ((b.key.charCodeAt(1) * seed) % 7),
        );
        const a = decideGate(rs, p);
        const b = decideGate(shuffled, p);
        expect(b.state).toBe(a.state);
        if (a.state === 'closed' && b.state === 'closed') {
          expect([b.met, b.passed, b.total]).toEqual([a.met, a.passed, a.total]);
          expect(new Map(b.results.map((r) => [r.key, r]))).toEqual(
            new Map(a.results.map((r) => [r.key, r])),
          );
        }
      }),
    );
  });

  it('never closes while a key is pending or a key without a receipt holds a live lease', () => {
    fc.assert(
      fc.property(records, policy, (rs, p) => {
        const blocked = rs.some(
          (r) => r.outcome.kind === 'pending' || (r.outcome.kind === 'dead' && r.liveLease),
        );
        if (blocked) expect(decideGate(rs, p).state).toBe('open');
      }),
    );
  });

  it('counts a pass only for an ok, verified receipt whose required checks are current passes', () => {
    fc.assert(
      fc.property(records, policy, (rs, p) => {
        const d = decideGate(rs, p);
        if (d.state !== 'closed') return;
        for (const [i, r] of d.results.entries()) {
          const o = rs[i]!.outcome;
          const good =
            o.kind === 'receipt' &&
            o.status === 'ok' &&
            o.problem === null &&
            p.requireChecks.every((c) =>
              rs[i]!.checks.some(
                (x) =>
                  x.checker === c &&
                  x.current &&
                  (x.verdict === 'pass' || (x.verdict === 'flaky' && p.allowFlaky)),
              ),
            );
          expect(r.pass).toBe(good);
        }
        expect(d.total).toBe(rs.length);
      }),
    );
  });
});
