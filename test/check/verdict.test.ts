import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  agreementOf,
  marksOf,
  type Outcome,
  outcomeOfRun,
  quorumOutcome,
  type Vote,
  verdictOf,
} from '../../src/check/verdict.js';

describe('verdictOf', () => {
  const cases: Array<{ outcomes: Outcome[]; verdict: string }> = [
    { outcomes: [], verdict: 'error' },
    { outcomes: ['error'], verdict: 'error' },
    { outcomes: ['error', 'error'], verdict: 'error' },
    { outcomes: ['pass'], verdict: 'pass' },
    { outcomes: ['pass', 'pass'], verdict: 'pass' },
    { outcomes: ['error', 'pass'], verdict: 'pass' },
    { outcomes: ['fail'], verdict: 'fail' },
    { outcomes: ['fail', 'error', 'fail'], verdict: 'fail' },
    { outcomes: ['fail', 'pass'], verdict: 'flaky' },
    { outcomes: ['pass', 'fail'], verdict: 'flaky' },
    { outcomes: ['uncertain'], verdict: 'uncertain' },
    { outcomes: ['pass', 'uncertain'], verdict: 'uncertain' },
    { outcomes: ['fail', 'pass', 'uncertain'], verdict: 'uncertain' },
  ];
  for (const c of cases)
    it(`[${c.outcomes.join(', ')}] is ${c.verdict}`, () => {
      expect(verdictOf(c.outcomes)).toBe(c.verdict);
    });

  it('never lets re-running after anything but a pass end in pass (property)', () => {
    const outcome = fc.constantFrom<Outcome>('pass', 'fail', 'uncertain', 'error');
    fc.assert(
      fc.property(fc.array(outcome), fc.array(outcome), (before, after) => {
        if (before.some((o) => o === 'fail' || o === 'uncertain'))
          expect(verdictOf([...before, ...after])).not.toBe('pass');
      }),
    );
  });

  it('an error never makes a fail: errors added to any record leave its verdict as it was (property)', () => {
    const outcome = fc.constantFrom<Outcome>('pass', 'fail', 'uncertain');
    fc.assert(
      fc.property(fc.array(outcome, { minLength: 1 }), fc.nat(5), (evidence, errors) => {
        const with_ = [...evidence, ...Array<Outcome>(errors).fill('error')];
        expect(verdictOf(with_)).toBe(verdictOf(evidence));
      }),
    );
  });
});

describe('marksOf', () => {
  it('is one mark per attempt, oldest first', () => {
    expect(marksOf(['fail', 'pass', 'uncertain', 'error'])).toBe('✗✓?!');
    expect(marksOf([])).toBe('');
  });
});

describe('quorumOutcome and agreementOf', () => {
  const cases: Array<{ votes: Vote[]; quorum: number; outcome: Outcome; agreement: string }> = [
    { votes: ['pass', 'pass', 'fail'], quorum: 2, outcome: 'pass', agreement: '2/3' },
    { votes: ['fail', 'pass', 'fail'], quorum: 2, outcome: 'fail', agreement: '2/3' },
    { votes: ['pass', 'fail', 'invalid'], quorum: 2, outcome: 'uncertain', agreement: '1/3' },
    { votes: ['pass', 'error', 'error'], quorum: 2, outcome: 'uncertain', agreement: '1/3' },
    { votes: ['error', 'error', 'error'], quorum: 2, outcome: 'error', agreement: '0/3' },
    { votes: ['invalid', 'invalid', 'invalid'], quorum: 2, outcome: 'uncertain', agreement: '0/3' },
    { votes: ['pass', 'pass', 'pass'], quorum: 3, outcome: 'pass', agreement: '3/3' },
    { votes: ['pass', 'pass', 'fail'], quorum: 3, outcome: 'uncertain', agreement: '2/3' },
    { votes: ['fail'], quorum: 1, outcome: 'fail', agreement: '1/1' },
    { votes: [], quorum: 1, outcome: 'error', agreement: '0/0' },
  ];
  for (const c of cases)
    it(`[${c.votes.join(', ')}] with quorum ${c.quorum}: ${c.outcome}, ${c.agreement}`, () => {
      expect(quorumOutcome(c.votes, c.quorum)).toBe(c.outcome);
      expect(agreementOf(c.votes)).toBe(c.agreement);
    });
});

describe('outcomeOfRun', () => {
  const base = { exitCode: 0, signal: null, timedOut: false, startFailed: null };
  const cases = [
    { name: 'exit 0 passes', run: base, outcome: 'pass', why: null },
    { name: 'exit 1 fails', run: { ...base, exitCode: 1 }, outcome: 'fail', why: 'exit 1' },
    { name: 'exit 136 fails', run: { ...base, exitCode: 136 }, outcome: 'fail', why: 'exit 136' },
    { name: 'exit 138 fails', run: { ...base, exitCode: 138 }, outcome: 'fail', why: 'exit 138' },
    {
      name: 'a timeout fails',
      run: { ...base, exitCode: null, timedOut: true },
      outcome: 'fail',
      why: 'timed out',
    },
    {
      name: 'a timeout fails even when the run also reported a signal',
      run: { ...base, exitCode: null, signal: 'SIGKILL', timedOut: true },
      outcome: 'fail',
      why: 'timed out',
    },
    {
      name: 'SIGKILL from outside (exit 137) is an error',
      run: { ...base, exitCode: 137 },
      outcome: 'error',
      why: 'killed by SIGKILL (out of memory?)',
    },
    {
      name: 'a signal from outside is an error',
      run: { ...base, exitCode: null, signal: 'SIGTERM' },
      outcome: 'error',
      why: 'killed by SIGTERM',
    },
    {
      name: 'a run that could not start is an error',
      run: { ...base, exitCode: 1, startFailed: 'bwrap: no namespaces' },
      outcome: 'error',
      why: 'bwrap: no namespaces',
    },
    {
      name: 'a run that could not start is an error, even with a timeout',
      run: { ...base, exitCode: null, timedOut: true, startFailed: 'spawn failed' },
      outcome: 'error',
      why: 'spawn failed',
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(outcomeOfRun(c.run)).toEqual({ outcome: c.outcome, why: c.why });
    });
});
