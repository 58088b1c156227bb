// The hidden characters: the bidi controls and the default-ignorable code points, counted wherever they
// stand (the page's warning says how many), each named by its code point.
import { describe, expect, it } from 'vitest';
import { codePointLabel, countHidden } from '../../src/core/hidden-chars.js';

describe('hidden characters', () => {
  it.each([
    { name: 'nothing hidden', text: 'plain café → ✓ 日本 عربى', n: 0 },
    { name: 'one zero-width space alone', text: '\u200b', n: 1 },
    { name: 'a Trojan Source line', text: 'x != "user\u202e \u2066// admin\u2069 \u2066"', n: 4 },
    { name: 'the bidi marks', text: '\u200e\u200f\u061c', n: 3 },
    { name: 'tag characters (one each, past U+FFFF)', text: '\u{e0049}\u{e0047}', n: 2 },
    { name: 'a soft hyphen, a word joiner, a byte order mark', text: '\u00ad\u2060\ufeff', n: 3 },
  ])('counts $name', ({ text, n }) => {
    expect(countHidden(text)).toBe(n);
  });

  it('names a character by its code point, four hex digits at least', () => {
    expect(codePointLabel('\u202e')).toBe('U+202E');
    expect(codePointLabel('\u00ad')).toBe('U+00AD');
    expect(codePointLabel('\u{e0049}')).toBe('U+E0049');
  });
});
