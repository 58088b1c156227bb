// Text bound for a terminal, made inert: C0 controls (ESC, BEL, CR, backspace…), DEL, C1 controls
// (U+0080–U+009F, where U+009B is a one-character CSI), the line/paragraph separators and the hidden
// characters of hidden-chars.ts (the bidi controls of "Trojan Source", zero-width and tag characters) are
// written as visible \xNN / \uNNNN / \u{NNNNN} escapes.
// A host chooses receipt reasons and stderr tails, so nothing it sends may move the cursor, erase a
// line, set the title (OSC) or reorder what the user reads. --json output keeps its exact values: only
// the characters JSON.stringify leaves raw are written as \uNNNN escapes (terminalJson).

import { HIDDEN_CLASS } from './hidden-chars.js';

// \t and \n are kept apart: the `lines` form keeps \n, a one-line form escapes it too.
const UNSAFE = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029${HIDDEN_CLASS}]`, 'gu');
const UNSAFE_ONE_LINE = new RegExp(`[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f\\u2028\\u2029${HIDDEN_CLASS}]`, 'gu');

function escapeChar(c: string): string {
  const n = c.codePointAt(0)!;
  // Stryker disable next-line EqualityOperator: U+00FF is no character this escapes (nor U+FFFF below)
  if (n <= 0xff) return `\\x${n.toString(16).padStart(2, '0')}`;
  // a tag character is past U+FFFF: braces keep its escape from reading as four digits and a letter
  // Stryker disable next-line EqualityOperator: see above
  return n <= 0xffff ? `\\u${n.toString(16).padStart(4, '0')}` : `\\u{${n.toString(16)}}`;
}

/** `text` with every control and hidden character escaped; `lines: true` keeps newlines (multi-line output). */
export function terminalText(text: string, opts: { lines?: boolean } = {}): string {
  return text.replace(opts.lines ? UNSAFE : UNSAFE_ONE_LINE, escapeChar);
}

// JSON.stringify escapes the C0 controls but leaves DEL, the C1 controls, the line separators and the
// hidden characters raw. They can only stand inside strings, so escaping them anywhere is safe.
const JSON_RAW = new RegExp(`[\\x7f-\\x9f\\u2028\\u2029${HIDDEN_CLASS}]`, 'gu');

/** `\uNNNN` for each UTF-16 unit of `c` (JSON has no other escape for a character past U+FFFF). */
function jsonEscape(c: string): string {
  let out = '';
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** JSON text with the characters JSON.stringify left raw written as \uNNNN: it parses to the same values. */
export function terminalJson(json: string): string {
  return json.replace(JSON_RAW, jsonEscape);
}
