import { describe, expect, it } from 'vitest';
import { terminalJson, terminalText } from '../../src/core/terminal-text.js';

describe('terminalText', () => {
  it.each([
    { name: 'an OSC title sequence', text: '\x1b]0;pwned\x07ok', out: '\\x1b]0;pwned\\x07ok' },
    { name: 'erase-line and cursor up', text: 'a\x1b[2K\x1b[1Ab', out: 'a\\x1b[2K\\x1b[1Ab' },
    { name: 'a carriage return', text: 'failed\rok    ', out: 'failed\\x0dok    ' },
    { name: 'a backspace', text: 'no\b\bok', out: 'no\\x08\\x08ok' },
    { name: 'DEL', text: 'a\x7fb', out: 'a\\x7fb' },
    { name: 'a C1 CSI (U+009B)', text: 'a\u009b2Kb', out: 'a\\x9b2Kb' },
    { name: 'a C1 OSC (U+009D)', text: '\u009d0;t\u009c', out: '\\x9d0;t\\x9c' },
    { name: 'a right-to-left override', text: 'ok\u202egnp.exe', out: 'ok\\u202egnp.exe' },
    { name: 'a bidi isolate', text: '\u2066x\u2069', out: '\\u2066x\\u2069' },
    { name: 'a right-to-left mark', text: 'a\u200fb', out: 'a\\u200fb' },
    { name: 'an Arabic letter mark', text: 'a\u061cb', out: 'a\\u061cb' },
    { name: 'a zero-width space', text: 'ad\u200bmin', out: 'ad\\u200bmin' },
    { name: 'a soft hyphen', text: 'pass\u00adword', out: 'pass\\xadword' },
    {
      name: 'tag characters (text no one sees)',
      text: 'ok\u{e0049}\u{e0047}',
      out: 'ok\\u{e0049}\\u{e0047}',
    },
    { name: 'a line separator', text: 'a\u2028b', out: 'a\\u2028b' },
    { name: 'a NUL', text: 'a\0b', out: 'a\\x00b' },
    { name: 'a newline (one-line form)', text: 'a\nb', out: 'a\\x0ab' },
    { name: 'a tab', text: 'a\tb', out: 'a\tb' },
    { name: 'plain Unicode', text: 'café → ✓ 日本', out: 'café → ✓ 日本' },
  ])('escapes $name', ({ text, out }) => {
    expect(terminalText(text)).toBe(out);
  });

  it('keeps newlines in the multi-line form and still escapes the rest', () => {
    expect(terminalText('a\nb\x1b[2K\r\n', { lines: true })).toBe('a\nb\\x1b[2K\\x0d\n');
  });

  it('terminalJson writes what JSON.stringify leaves raw as \\u escapes, and the JSON parses to the same value', () => {
    const value = { reason: 'a\u009b2K\u202eb\x7f\u2028\x1b]52;c;x\x07\r\u200b\u{e0049}', n: 1 };
    const json = terminalJson(JSON.stringify(value));
    expect(json).not.toMatch(
      /[\x00-\x1f\x7f-\x9f\u2028\u2029\p{Bidi_Control}\p{Default_Ignorable_Code_Point}]/u,
    );
    expect(json).toContain('\\u200b\\udb40\\udc49');
    expect(JSON.parse(json)).toEqual(value);
  });
});
