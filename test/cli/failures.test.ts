import { describe, expect, it } from 'vitest';
import { failureOf, worstExit } from '../../src/cli/failures.js';
import { ConflictError, RejectedError, UsageError } from '../../src/core/errors.js';

describe('worstExit', () => {
  const cases = [
    { codes: [], worst: 0 },
    { codes: [2, 3], worst: 3 },
    { codes: [4, 3, 2], worst: 4 },
    { codes: [3, 1, 4], worst: 1 },
    // the disk's failure alone is never a success, and outranks a verdict (a retry is needed first)
    { codes: [5], worst: 5 },
    { codes: [3, 5, 2], worst: 5 },
    { codes: [4, 5], worst: 5 },
    { codes: [5, 1], worst: 1 },
  ] as const;
  for (const c of cases)
    it(`is ${c.worst} of [${c.codes.join(', ')}]`, () => expect(worstExit(c.codes)).toBe(c.worst));
});

describe('failureOf', () => {
  it('keeps the code, message and exit code of a GenjobError', () => {
    expect(failureOf('k', new RejectedError('EGJ_X', 'm'))).toEqual({
      key: 'k',
      code: 'EGJ_X',
      message: 'm',
      exitCode: 3,
    });
    expect(failureOf('k', new ConflictError('EGJ_Y', 'n')).exitCode).toBe(4);
    expect(failureOf('k', new UsageError('EGJ_Z', 'o')).exitCode).toBe(2);
  });
  it('throws anything else on (a bug is never a row)', () => {
    expect(() => failureOf('k', new TypeError('boom'))).toThrow('boom');
  });
});
