// The hidden characters: the bidi controls and the default-ignorable code points, counted wherever they
// stand (the page's warning says how many), each named by its code point.
import { describe, expect, it } from 'vitest';
import { codePointLabel, countHidden, hiddenAdded, TAG_RUNS, tagText } from '../../src/core/hidden-chars.js';
import { tagChars } from '../helpers/tag-chars.js';

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

  it('spells the ASCII text a run of tag characters mirrors', () => {
    expect(tagText('\u{e0049}\u{e0047}\u{e0020}\u{e007e}')).toBe('IG ~');
    expect([...'a\u{e0048}\u{e0069}b\u{e0021}c'.matchAll(TAG_RUNS)].map(([run]) => tagText(run))).toEqual([
      'Hi',
    ]);
  });

  const b = (s: string) => Buffer.from(s);
  it.each([
    { name: 'a new file, all it holds', before: null, after: b('a\u202eb\u200b'), n: 2 },
    { name: 'a file that had them and keeps them', before: b('\u202e\n'), after: b('x\n\u202e\n'), n: 0 },
    { name: 'every one on a line edited (a new line)', before: b('\u202e\n'), after: b('x\u202e\n'), n: 1 },
    {
      name: 'those on the new lines',
      before: b('\u200b\n'),
      after: b('\u200b\n\u200b\u{e0041}\n'),
      n: 2,
    },
    // totals would cancel: four emoji variation selectors dropped, four bidi controls added
    {
      name: 'those added where others were dropped',
      before: b('notes = "\u26a0\ufe0f \u26a0\ufe0f \u26a0\ufe0f \u26a0\ufe0f"\nok\n'),
      after: b('notes = "warnings"\nif (role != "user\u202e \u2066// admin only\u2069 \u2066") {\nok\n'),
      n: 4,
    },
    { name: 'none for a file that loses some', before: b('\u200b\u200b'), after: b('x'), n: 0 },
    {
      name: 'none in bytes that are not text',
      before: null,
      after: Buffer.from([0xe2, 0x80, 0xae, 0]),
      n: 0,
    },
    { name: 'a byte-order mark put at the top', before: b('x'), after: b('\ufeffx'), n: 1 },
  ])('hiddenAdded: $name', ({ before, after, n }) => {
    expect(hiddenAdded(before, after)).toEqual({ count: n, tags: [] });
  });

  it.each([
    { name: 'in a new file', before: null, after: `a${tagChars('run it')}`, count: 6, spelled: ['run it'] },
    {
      name: 'only those new to the file',
      before: `${tagChars('old')}`,
      after: `${tagChars('old')}\n${tagChars('new!')}`,
      count: 4,
      spelled: ['new!'],
    },
    // the count is net, but at least the new runs' characters: a sentence swapped for another as long adds it
    {
      name: 'a sentence swapped for one as long',
      before: tagChars('hello'),
      after: tagChars('pass!'),
      count: 5,
      spelled: ['pass!'],
    },
    {
      name: 'none for a run that only moved',
      before: `${tagChars('same')}\nx`,
      after: `x\n${tagChars('same')}`,
      count: 0,
      spelled: [],
    },
  ])('hiddenAdded spells the runs of tag characters $name', ({ before, after, count, spelled }) => {
    expect(hiddenAdded(before === null ? null : b(before), b(after))).toEqual({ count, tags: spelled });
  });
});
