// Text bound for a terminal, made inert: C0 controls (ESC, BEL, CR, backspace…), DEL, C1 controls
// (U+0080–U+009F, where U+009B is a one-character CSI), the line/paragraph separators and the bidi
// embeddings, overrides and isolates ("Trojan Source") are written as visible \xNN / \uNNNN escapes.
// A host chooses receipt reasons and stderr tails, so nothing it sends may move the cursor, erase a
// line, set the title (OSC) or reorder what the user reads. --json output keeps its exact values: only
// the characters JSON.stringify leaves raw are written as \uNNNN escapes (terminalJson).

// \t and \n are kept apart: the `lines` form keeps \n, a one-line form escapes it too.
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;
const UNSAFE_ONE_LINE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

function escapeChar(c: string): string {
  const n = c.codePointAt(0)!;
  return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
}

/** `text` with every control and bidi character escaped; `lines: true` keeps newlines (multi-line output). */
export function terminalText(text: string, opts: { lines?: boolean } = {}): string {
  return text.replace(opts.lines ? UNSAFE : UNSAFE_ONE_LINE, escapeChar);
}

// JSON.stringify escapes the C0 controls but leaves DEL, the C1 controls, the line separators and the
// bidi controls raw. They can only stand inside strings, so escaping them anywhere is safe.
const JSON_RAW = /[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/** JSON text with the characters JSON.stringify left raw written as \uNNNN: it parses to the same values. */
export function terminalJson(json: string): string {
  return json.replace(JSON_RAW, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}
