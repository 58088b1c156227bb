// What a review surface (the report's pages, `apply --diff`) shows as a code point instead of drawing it,
// and counts in its warning: the hidden characters of hidden-chars.ts, and the controls a browser draws as
// nothing or as white space — C0 controls other than tab, newline and CR (DEL, ESC, NUL…), the C1
// controls, and the line and paragraph separators, which Chromium draws as a space: `// note<U+2028>evil()`
// reads as one comment where JavaScript runs evil(). The terminal escapes these (terminal-text.ts); the
// shared set is left as it is, so the judge's prompt and the merge gate count what they counted. A CR is
// no hidden character (a CRLF file is common): the report marks it apart (escape.ts).
import { HIDDEN_CLASS } from './hidden-chars.js';

/** The set as the inside of a character class (a regular expression with the `u` flag). */
export const MARKED_CLASS = `${HIDDEN_CLASS}\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f\\u2028\\u2029`;

const MARKED = new RegExp(`[${MARKED_CLASS}]`, 'gu');

/** How many characters of `text` a page marks as hidden (and warns of). */
export function countMarked(text: string): number {
  let n = 0;
  for (const _ of text.matchAll(MARKED)) n += 1;
  return n;
}

/** Names of the marked characters a reviewer is most likely to meet, by code point. */
const NAMES = new Map<number, string>([
  [0x00, 'null'],
  [0x08, 'backspace'],
  [0x0b, 'line tabulation'],
  [0x0c, 'form feed'],
  [0x1b, 'escape'],
  [0x7f, 'delete'],
  [0x85, 'next line'],
  [0xad, 'soft hyphen'],
  [0x34f, 'combining grapheme joiner'],
  [0x61c, 'Arabic letter mark'],
  [0x200b, 'zero-width space'],
  [0x200c, 'zero-width non-joiner'],
  [0x200d, 'zero-width joiner'],
  [0x200e, 'left-to-right mark'],
  [0x200f, 'right-to-left mark'],
  [0x2028, 'line separator'],
  [0x2029, 'paragraph separator'],
  [0x202a, 'left-to-right embedding'],
  [0x202b, 'right-to-left embedding'],
  [0x202c, 'pop directional formatting'],
  [0x202d, 'left-to-right override'],
  [0x202e, 'right-to-left override'],
  [0x2060, 'word joiner'],
  [0x2061, 'function application'],
  [0x2062, 'invisible times'],
  [0x2063, 'invisible separator'],
  [0x2064, 'invisible plus'],
  [0x2066, 'left-to-right isolate'],
  [0x2067, 'right-to-left isolate'],
  [0x2068, 'first strong isolate'],
  [0x2069, 'pop directional isolate'],
  [0xfeff, 'zero-width no-break space (byte order mark)'],
  [0xe0001, 'language tag'],
  [0xe007f, 'cancel tag'],
]);

/**
 * What a marked character is called, for a reader who hears the page rather than sees it ("U+202E" read
 * aloud says nothing of what it does): its name, else the kind it belongs to.
 */
export function markedName(c: string): string {
  const cp = c.codePointAt(0)!;
  const named = NAMES.get(cp);
  if (named !== undefined) return named;
  if ((cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef)) return 'variation selector';
  if (cp >= 0xe0000 && cp <= 0xe007f) return 'tag character';
  if (cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f)) return 'control character';
  return 'invisible character';
}
