import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalBytes, canonicalJson, isCanonical } from '../../src/core/canonical-json.js';

describe('canonical JSON', () => {
  it('sorts keys and drops whitespace, so key order never changes the bytes that are hashed', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'] })).toBe('{"a":[true,null,"x"],"b":1}');
    expect(canonicalBytes({ b: 1, a: 2 }).equals(canonicalBytes({ a: 2, b: 1 }))).toBe(true);
  });

  it('refuses a value with no JSON form with a TypeError that says so, instead of hashing "undefined"', () => {
    expect(() => canonicalJson(undefined)).toThrow(new TypeError('value has no JSON form'));
    expect(() => canonicalBytes(undefined)).toThrow(TypeError);
  });

  it('calls bytes canonical only when they are exactly the canonical form of what they parse to', () => {
    const value = { epoch: 1, key: 'k' };
    expect(isCanonical(Buffer.from('{"epoch":1,"key":"k"}'), value)).toBe(true);
    expect(isCanonical(Buffer.from('{"key":"k","epoch":1}'), value)).toBe(false);
    expect(isCanonical(Buffer.from('{"epoch":1.0,"key":"k"}'), value)).toBe(false);
  });

  it('writes exactly the bytes the canonicalize package writes, for any value (property)', () => {
    /** The package's text, or the message it throws. */
    const outcome = (f: () => string | undefined) => {
      try {
        return { text: f() };
      } catch (err) {
        return { error: (err as Error).message };
      }
    };
    const odd = fc.constantFrom(
      undefined,
      Number.NaN,
      -0,
      1e21,
      5e-7,
      '\ud800',
      'a\udc00b',
      '\u2028',
      Symbol('s'),
    );
    const value = fc.letrec((tie) => ({
      any: fc.oneof({ depthSize: 'small' }, fc.jsonValue(), odd, tie('array'), tie('object')),
      array: fc.array(tie('any'), { maxLength: 4 }),
      object: fc.dictionary(
        fc.string({ unit: fc.constantFrom('a', 'B', '_', 'é', '\ud800', '\u{1f600}') }),
        tie('any'),
        {
          maxKeys: 4,
        },
      ),
    })).any;
    fc.assert(
      fc.property(value, (v) => {
        const want = outcome(() => canonicalize(v));
        const got = outcome(() => canonicalJson(v));
        if (want.text === undefined && want.error === undefined)
          expect(got).toEqual({ error: 'value has no JSON form' });
        else expect(got).toEqual(want);
      }),
      { numRuns: 2000 },
    );
    // what the walk leaves to the package: a hole, toJSON, a class, a cycle
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    for (const v of [
      new Array(3),
      [1, undefined],
      { d: new Date(0) },
      { m: new Map() },
      cyclic,
      { f: () => 1 },
    ])
      expect(outcome(() => canonicalJson(v))).toEqual(outcome(() => canonicalize(v)));
  });
});
