// Characters that change how text reads without being seen. The bidirectional controls (embeddings,
// overrides, isolates and marks) make a line display in another order than a compiler reads it ("Trojan
// Source"); the default-ignorable code points (zero-width spaces and joiners, the soft hyphen, variation
// selectors, the tag characters U+E0000–U+E007F, which can carry a whole sentence no one sees) draw
// nothing at all. Model-written text may hold any of them, by accident or by a prompt injected into the
// model's input, so wherever a person reviews such text genjob shows each one as its code point.
import { utf8Text } from './utf8-text.js';

/** The set as the inside of a character class (a regular expression with the `u` flag). */
export const HIDDEN_CLASS = '\\p{Bidi_Control}\\p{Default_Ignorable_Code_Point}';

/** Every hidden character, for matchAll (global). */
const HIDDEN_CHARS = new RegExp(`[${HIDDEN_CLASS}]`, 'gu');

/**
 * A run of two or more printable tag characters (U+E0020–U+E007E): each mirrors an ASCII character, so a
 * run is text no one sees that a model reads. Global: for a replace or matchAll.
 */
export const TAG_RUNS = /[\u{E0020}-\u{E007E}]{2,}/gu;

/** The ASCII text a run of tag characters spells. */
export function tagText(run: string): string {
  let text = '';
  for (const c of run) text += String.fromCodePoint(c.codePointAt(0)! - 0xe0000);
  return text;
}

/** `U+202E` for a character (four hex digits at least, as Unicode writes them). */
export function codePointLabel(c: string): string {
  return `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** How many hidden characters `text` holds. */
export function countHidden(text: string): number {
  let n = 0;
  for (const _ of text.matchAll(HIDDEN_CHARS)) n += 1;
  return n;
}

/**
 * What a change brings in that no one sees: the hidden characters on the lines the file holds after it
 * that it did not hold before (none for bytes that are not text; `before` null or undefined: the file is
 * new), and the text of each run of tag characters it holds that the file before did not. Counted on new
 * lines, not as the difference of two totals: a change that drops some elsewhere (emoji variation
 * selectors) cancelled as many bidi controls it added. A line kept, or only moved, adds none; a line
 * edited is a new line and counts every one it holds; a smuggled sentence swapped for another as long
 * adds the new one's characters.
 */
export function hiddenAdded(
  before: Uint8Array | null | undefined,
  after: Uint8Array,
): { count: number; tags: string[] } {
  const afterText = utf8Text(after);
  if (afterText === undefined) return { count: 0, tags: [] };
  // Stryker disable next-line StringLiteral: no file, or bytes that are not text, count as any text without hidden characters
  const beforeText = before ? (utf8Text(before) ?? '') : '';
  const had = new Set(tagTexts(beforeText));
  const tags = tagTexts(afterText).filter((t) => !had.has(t));
  const newTags = tags.reduce((n, t) => n + t.length, 0);
  return { count: Math.max(hiddenOnNewLines(beforeText, afterText), newTags), tags };
}

/** The hidden characters on the lines of `after` that `before` does not hold (as many times over). */
function hiddenOnNewLines(beforeText: string, afterText: string): number {
  if (countHidden(afterText) === 0) return 0; // most files: no line to compare
  const had = new Map<string, number>();
  for (const line of beforeText.split('\n')) had.set(line, (had.get(line) ?? 0) + 1);
  let n = 0;
  for (const line of afterText.split('\n')) {
    const left = had.get(line) ?? 0;
    if (left > 0) had.set(line, left - 1);
    else n += countHidden(line);
  }
  return n;
}

/** The text of each run of tag characters in `text`, in order. */
export function tagTexts(text: string): string[] {
  return Array.from(text.matchAll(TAG_RUNS), ([run]) => tagText(run));
}
