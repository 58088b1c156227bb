import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CurrentFile, expectPlan, planApply } from '../../src/apply/apply-plan.js';
import { ConflictError, RejectedError } from '../../src/core/errors.js';
import { thrown } from '../helpers/thrown.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);

const job = {
  inputs: [
    { path: 'README.md', sha256: A },
    { path: 'src/x.ts', sha256: B },
    { path: 'src/y.ts', sha256: null },
  ],
};

function tree(entries: Record<string, CurrentFile>): Map<string, CurrentFile> {
  return new Map(Object.entries(entries));
}

const minted = tree({
  'README.md': { sha256: A, mode: 0o644 },
  'src/x.ts': { sha256: B, mode: 0o755 },
  'src/y.ts': { sha256: null, mode: null },
});

describe('planApply', () => {
  it.each([
    {
      name: 'a replaced file keeps its mode; a created file gets 0644',
      outputs: [
        { path: 'src/y.ts', sha256: C },
        { path: 'src/x.ts', sha256: C },
      ],
      current: minted,
      plan: {
        kind: 'plan',
        writes: [
          { path: 'src/x.ts', before: B, after: C, mode: 0o755 },
          { path: 'src/y.ts', before: null, after: C, mode: 0o644 },
        ],
      },
    },
    {
      name: 'an output its receipt makes executable gets the executable bits, created or replaced',
      outputs: [
        { path: 'src/y.ts', sha256: C, executable: true as const },
        { path: 'README.md', sha256: C, executable: true as const },
        { path: 'src/x.ts', sha256: C, executable: true as const },
      ],
      current: tree({
        'README.md': { sha256: A, mode: 0o640 },
        'src/x.ts': { sha256: B, mode: 0o755 },
        'src/y.ts': { sha256: null, mode: null },
      }),
      plan: {
        kind: 'plan',
        writes: [
          { path: 'README.md', before: A, after: C, mode: 0o751, before_mode: 0o640 },
          { path: 'src/x.ts', before: B, after: C, mode: 0o755 },
          { path: 'src/y.ts', before: null, after: C, mode: 0o755 },
        ],
      },
    },
    {
      name: 'an output equal to its input is not a write',
      outputs: [{ path: 'README.md', sha256: A }],
      current: minted,
      plan: { kind: 'plan', writes: [] },
    },
    {
      name: 'an input that is not an output but changed makes the job stale',
      outputs: [{ path: 'src/x.ts', sha256: C }],
      current: tree({ ...Object.fromEntries(minted), 'README.md': { sha256: C, mode: 0o644 } }),
      plan: { kind: 'stale', path: 'README.md', minted: A, current: C },
    },
    {
      name: 'a file to create that now exists makes the job stale',
      outputs: [{ path: 'src/y.ts', sha256: C }],
      current: tree({ ...Object.fromEntries(minted), 'src/y.ts': { sha256: C, mode: 0o644 } }),
      plan: { kind: 'stale', path: 'src/y.ts', minted: null, current: C },
    },
    {
      name: 'a deleted input makes the job stale',
      outputs: [],
      current: tree({ ...Object.fromEntries(minted), 'src/x.ts': { sha256: null, mode: null } }),
      plan: { kind: 'stale', path: 'src/x.ts', minted: B, current: null },
    },
    {
      name: 'an output outside the allowed paths is refused',
      outputs: [{ path: 'evil.sh', sha256: C }],
      current: minted,
      plan: { kind: 'invalid', path: 'evil.sh', rule: 'is not one of the job allowed paths' },
    },
    {
      name: 'a repeated output is refused',
      outputs: [
        { path: 'src/x.ts', sha256: C },
        { path: 'src/x.ts', sha256: A },
      ],
      current: minted,
      plan: { kind: 'invalid', path: 'src/x.ts', rule: 'is listed twice among the outputs' },
    },
  ])('$name', ({ outputs, current, plan }) => {
    expect(planApply(job, outputs, current)).toEqual(plan);
  });

  it('turns a stale verdict into EGJ_STALE (exit 4) and an invalid one into EGJ_OUTSIDE_CONTRACT (exit 3)', () => {
    const stale = () => expectPlan({ kind: 'stale', path: 'src/x.ts', minted: B, current: null });
    expect(stale).toThrow(ConflictError);
    expect(stale).toThrow(
      /src\/x\.ts: the repository changed under the job \(expected sha256 bbbbbbbbbbbb, found absent\)/,
    );
    const outside = () =>
      expectPlan({ kind: 'invalid', path: 'evil.sh', rule: 'is not one of the job allowed paths' });
    expect(outside).toThrow(RejectedError);
  });

  it('tells the user which input went stale, both digests, rule 6 and that nothing was written', () => {
    const err = thrown(() => expectPlan({ kind: 'stale', path: 'src/x.ts', minted: B, current: C }));
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).code).toBe('EGJ_STALE');
    expect((err as ConflictError).exitCode).toBe(4);
    expect((err as Error).message).toBe(
      'src/x.ts: the repository changed under the job (expected sha256 bbbbbbbbbbbb, found sha256 cccccccccccc); ' +
        'rule 6: every input must still match the job; nothing was written',
    );
  });

  it('tells the user which output broke the contract, the rule and that nothing was written', () => {
    const err = thrown(() =>
      expectPlan({ kind: 'invalid', path: 'src/x.ts', rule: 'is listed twice among the outputs' }),
    );
    expect(err).toBeInstanceOf(RejectedError);
    expect((err as RejectedError).code).toBe('EGJ_OUTSIDE_CONTRACT');
    expect((err as RejectedError).exitCode).toBe(3);
    expect((err as RejectedError).details()).toEqual({ file: 'src/x.ts' });
    expect((err as Error).message).toBe(
      'src/x.ts: output is listed twice among the outputs (rule 3); nothing was written',
    );
  });

  it('never plans a write when any input differs from the job', () => {
    const digest = fc.constantFrom(A, B, C, null);
    fc.assert(
      fc.property(
        fc.array(digest, { minLength: 3, maxLength: 3 }),
        fc.array(fc.constantFrom(A, B, C)),
        (now, outs) => {
          const current = tree(
            Object.fromEntries(
              job.inputs.map((input, i) => [input.path, { sha256: now[i] ?? null, mode: 0o644 }]),
            ),
          );
          const outputs = outs.slice(0, 3).map((sha256, i) => ({ path: job.inputs[i]!.path, sha256 }));
          const plan = planApply(job, outputs, current);
          const fresh = job.inputs.every((input, i) => input.sha256 === now[i]);
          expect(plan.kind).toBe(fresh ? 'plan' : 'stale');
          if (plan.kind === 'plan') {
            for (const w of plan.writes) expect(w.before).not.toBe(w.after);
          }
        },
      ),
    );
  });
});
