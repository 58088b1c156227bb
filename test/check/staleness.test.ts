import { describe, expect, it } from 'vitest';
import { newerFirst, speaking, staleness, type Today } from '../../src/check/staleness.js';

const R = 'r'.repeat(64);
const B = 'b'.repeat(64);
const T = 't'.repeat(40);
const today: Today = { receipt_sha256: R, binding_sha256: B, base_tree: T };
const facts = { receipt_sha256: R, binding_sha256: B, base_tree: T };

describe('staleness', () => {
  const cases: Array<{ name: string; today: Today; why: string | undefined }> = [
    { name: 'all three equal: current', today, why: undefined },
    { name: 'another receipt', today: { ...today, receipt_sha256: 'x'.repeat(64) }, why: 'receipt' },
    { name: 'no receipt any more', today: { ...today, receipt_sha256: null }, why: 'receipt' },
    { name: 'another binding', today: { ...today, binding_sha256: 'x'.repeat(64) }, why: 'binding' },
    { name: 'the checker is no longer declared', today: { ...today, binding_sha256: null }, why: 'binding' },
    { name: 'HEAD moved', today: { ...today, base_tree: 'x'.repeat(40) }, why: 'base' },
    { name: 'no HEAD', today: { ...today, base_tree: null }, why: 'base' },
    {
      name: 'receipt is named before binding and base',
      today: { receipt_sha256: null, binding_sha256: null, base_tree: null },
      why: 'receipt',
    },
    {
      name: 'binding is named before base',
      today: { ...today, binding_sha256: null, base_tree: null },
      why: 'binding',
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(staleness(facts, c.today)).toBe(c.why);
    });
});

describe('newerFirst and speaking', () => {
  const rec = (sequence: number, finished_at: string, digest: string, over: Partial<typeof facts> = {}) => ({
    ...facts,
    ...over,
    sequence,
    finished_at,
    digest,
  });

  it('orders by sequence, then finish time, then digest, newest first', () => {
    const a = rec(1, '2026-01-02', 'a');
    const b = rec(2, '2026-01-01', 'b');
    const c = rec(2, '2026-01-03', 'c');
    const d = rec(2, '2026-01-03', 'd');
    expect([a, b, c, d].sort(newerFirst).map((r) => r.digest)).toEqual(['d', 'c', 'b', 'a']);
    expect([d, c, b, a].sort(newerFirst).map((r) => r.digest)).toEqual(['d', 'c', 'b', 'a']);
    expect(newerFirst(a, a)).toBe(0);
  });

  it('a later finish wins over the digest order, and the larger digest breaks a full tie, either way round', () => {
    const later = rec(2, '2026-01-03', 'a');
    const earlier = rec(2, '2026-01-01', 'z');
    expect(newerFirst(later, earlier)).toBe(-1);
    expect(newerFirst(earlier, later)).toBe(1);
    expect(newerFirst(rec(1, 't', 'c'), rec(1, 't', 'd'))).toBe(1);
    expect(newerFirst(rec(1, 't', 'd'), rec(1, 't', 'c'))).toBe(-1);
  });

  it('the newest current record speaks, even when a newer stale one exists', () => {
    const old = rec(1, 't1', 'old');
    const newer = rec(2, 't2', 'newer', { binding_sha256: 'x'.repeat(64) });
    expect(speaking([newer, old], today)?.digest).toBe('old');
    expect(speaking([old, newer], today)?.digest).toBe('old');
  });

  it('with no current record, the newest speaks (and is stale); with none, nothing does', () => {
    const stale = { ...today, base_tree: 'x'.repeat(40) };
    const a = rec(1, 't1', 'a');
    const b = rec(3, 't0', 'b');
    expect(speaking([a, b], stale)?.digest).toBe('b');
    expect(speaking([], today)).toBeUndefined();
  });

  it('among current records, the newest speaks', () => {
    expect(speaking([rec(1, 't', 'one'), rec(2, 't', 'two')], today)?.digest).toBe('two');
  });
});
