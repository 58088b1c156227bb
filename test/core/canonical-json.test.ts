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
});
