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
