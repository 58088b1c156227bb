// The walk is canonical-json's fast path: plain data (what jobs, receipts and records are) must never
// reach the canonicalize package, which costs per character and per node. Every branch that hands a
// value to the package writes the same bytes, so only this count tells a walk that gives up early.
import canonicalize from 'canonicalize';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { canonicalJson } from '../../src/core/canonical-json.js';

vi.mock('canonicalize', async (importOriginal) => {
  const real = (await importOriginal<{ default: (v: unknown) => string | undefined }>()).default;
  return { default: vi.fn(real) };
});

const pkg = vi.mocked(canonicalize);

describe('canonical JSON: the walk', () => {
  beforeEach(() => pkg.mockClear());

  it('writes plain data itself, deep and wide, without the package', () => {
    let deep: unknown = { leaf: [1, -2.5, 0, 1e21, true, false, null, 'é\u{1f600}\n"'] };
    for (let i = 0; i < 100; i++) deep = i % 2 ? [deep, i] : { [`k${i}`]: deep, z: null };
    const plain = [
      {},
      [],
      { b: 1, a: [true, null, 'x'], c: { d: 'e' } },
      Object.assign(Object.create(null) as object, { n: 1 }),
      { skipped: undefined, kept: 1 },
      deep,
    ];
    for (const v of plain) canonicalJson(v);
    expect(pkg).not.toHaveBeenCalled();
  });

  it('hands the package exactly what the walk does not write: a lone surrogate, NaN, a hole, toJSON, a class, a cycle', () => {
    const cyclic: unknown[] = [1]; // through a later element
    cyclic.push(cyclic);
    const cyclicFirst: unknown[] = []; // through the first
    cyclicFirst.push(cyclicFirst, 1);
    const odd: unknown[] = [
      '\ud800',
      { k: Number.NaN },
      [1, undefined],
      { d: new Date(0) },
      { m: new Map() },
      cyclic,
      cyclicFirst,
    ];
    for (const v of odd) {
      pkg.mockClear();
      const mine = (() => {
        try {
          return canonicalJson(v);
        } catch (err) {
          return (err as Error).message;
        }
      })();
      expect(pkg).toHaveBeenCalledTimes(1);
      expect(typeof mine).toBe('string');
    }
  });
});
