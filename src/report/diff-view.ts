// A file's change drawn two ways, syntax-neutral: side by side (old | new, a removed run paired row by
// row with the added run after it, changed words marked) and unified (one column, - and + lines).
// Both views say what a line is without colour (WCAG 1.4.1): a - or + column on each side, with the
// words "removed" and "added" for a screen reader, and each table is captioned with the file's path and
// headed by what its sides are, so a reader who lands in one knows which file it shows.
// jsdiff computes the hunks (3 lines of context); an edit script longer than MAX_EDIT gives up with a
// note instead of a page that takes minutes to build, and one whose markup would pass the budget a page
// has left gives a note instead of a page of hundreds of megabytes (a file of 4 MiB of soft hyphens is
// some 160 MiB of markup in both views). A line's ending is part of it, as `apply --diff`
// shows: a CR is marked (escape.ts), a last line without its newline says so. Pure: two byte strings in,
// markup out.
import { diffWordsWithSpace, structuredPatch } from 'diff';
import { countMarked } from '../core/marked-chars.js';
import { utf8Text } from '../core/utf8-text.js';
import { type Html, html, markupLength } from './escape.js';

const MAX_EDIT = 20_000;
/** Markup a page may hold in its diffs (characters): beyond it a file is summarised, never drawn. */
export const PAGE_DIFF_MARKUP = 8 * 1024 * 1024;
/** Markup a row costs in both views beyond its text's: cells, line numbers, signs, classes, word marks. */
const ROW_MARKUP = 400;
/** Markup the two tables cost beyond their rows and labels: captions, column headers, colgroups. */
const TABLE_MARKUP = 1_000;
/** Word marks only on lines shorter than this: beyond it the line is marked whole. */
const MAX_WORD_LINE = 1_000;

export type DiffView =
  | {
      kind: 'text';
      split: Html;
      unified: Html;
      added: number;
      removed: number;
      /** Hidden characters and controls (marked-chars.ts) on the added lines: what this change brings in. */
      hidden: number;
    }
  /**
   * `hidden`: what the lines it does not draw bring in (all of the new side's, when no diff was made);
   * `large`: the diff was made but is too large to draw on a page (`apply --dry-run --diff` shows it).
   */
  | { kind: 'note'; note: string; hidden?: number; large?: true };

interface Row {
  old: number | null;
  new: number | null;
  sign: ' ' | '-' | '+';
  text: string;
  /** The file ends with this line, and it has no newline. */
  noEol?: true;
}

interface Hunk {
  header: string;
  rows: Row[];
}

function hunksOf(before: string, after: string): Hunk[] | undefined {
  const patch = structuredPatch('a', 'b', before, after, '', '', { context: 3, maxEditLength: MAX_EDIT });
  if (!patch) return undefined;
  return patch.hunks.map((h) => {
    let oldLine = h.oldStart;
    let newLine = h.newStart;
    const rows: Row[] = [];
    for (const line of h.lines) {
      const sign = line[0];
      const text = line.slice(1);
      if (sign === '\\') {
        rows[rows.length - 1]!.noEol = true; // "\ No newline at end of file": said of the line before
        continue;
      }
      if (sign === '-') rows.push({ old: oldLine++, new: null, sign: '-', text });
      else if (sign === '+') rows.push({ old: null, new: newLine++, sign: '+', text });
      else rows.push({ old: oldLine++, new: newLine++, sign: ' ', text });
    }
    return { header: `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`, rows };
  });
}

/** The two sides of a changed line with the words that differ marked. */
function wordMarks(oldText: string, newText: string): { old: Html; new: Html } {
  if (oldText.length > MAX_WORD_LINE || newText.length > MAX_WORD_LINE)
    return { old: html`${oldText}`, new: html`${newText}` };
  const parts = diffWordsWithSpace(oldText, newText);
  return {
    old: html`${parts.filter((p) => !p.added).map((p) => (p.removed ? html`<del>${p.value}</del>` : p.value))}`,
    new: html`${parts.filter((p) => !p.removed).map((p) => (p.added ? html`<ins>${p.value}</ins>` : p.value))}`,
  };
}

const NO_EOL = '\\ No newline at end of file';

/** What the two sides of a diff are, and the file it is of: its tables' caption and column headers. */
export interface DiffLabels {
  path: string;
  /** The left (old) side: `before` for an output against its input, `live` for a shadow answer. */
  old: string;
  /** The right (new) side: `after`, or the shadow plane's name. */
  new: string;
}

const classOf = (sign: Row['sign']) => (sign === '-' ? 'del' : sign === '+' ? 'add' : 'ctx');

/**
 * A line's sign as a cell of its own: the - or + a reader sees (colour is not the only mark of a change,
 * and the page reads the same with its stylesheet off), and the word a screen reader says instead.
 */
function signCell(sign: Row['sign']): Html {
  if (sign === ' ') return html`<td class="sign ctx"></td>`;
  const [cls, word] = sign === '-' ? ['del', 'removed'] : ['add', 'added'];
  return html`<td class="sign ${cls}"><span aria-hidden="true">${sign}</span><span class="vh">${word}</span></td>`;
}

function cell(side: 'old' | 'new', row: Row | undefined, marked?: Html): Html {
  if (!row) return html`<td class="ln empty"></td><td class="sign empty"></td><td class="empty"></td>`;
  const n = side === 'old' ? row.old : row.new;
  const cls = classOf(row.sign);
  const eol = row.noEol ? html` <span class="no-eol">${NO_EOL}</span>` : '';
  return html`<td class="ln ${cls}">${n}</td>${signCell(row.sign)}<td class="${cls}">${marked ?? row.text}${eol}</td>`;
}

function splitRows(rows: readonly Row[]): Html[] {
  const out: Html[] = [];
  let i = 0;
  while (i < rows.length) {
    const row = rows[i]!;
    if (row.sign === ' ') {
      out.push(html`<tr>${cell('old', row)}${cell('new', row)}</tr>`);
      i++;
      continue;
    }
    const removed: Row[] = [];
    const added: Row[] = [];
    while (i < rows.length && rows[i]!.sign === '-') removed.push(rows[i++]!);
    while (i < rows.length && rows[i]!.sign === '+') added.push(rows[i++]!);
    for (let k = 0; k < Math.max(removed.length, added.length); k++) {
      const l = removed[k];
      const r = added[k];
      const marks = l && r ? wordMarks(l.text, r.text) : undefined;
      out.push(html`<tr>${cell('old', l, marks?.old)}${cell('new', r, marks?.new)}</tr>`);
    }
  }
  return out;
}

function unifiedRows(rows: readonly Row[]): Html[] {
  return rows.map((row) => {
    const cls = classOf(row.sign);
    const eol = row.noEol
      ? html`<tr><td class="ln"></td><td class="ln"></td><td class="sign"></td><td class="no-eol">${NO_EOL}</td></tr>`
      : '';
    return html`<tr><td class="ln ${cls}">${row.old}</td><td class="ln ${cls}">${row.new}</td>${signCell(row.sign)}<td class="${cls}">${row.text}</td></tr>${eol}`;
  });
}

const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;

/** Hidden characters and controls on the added lines of `hunks`. */
function addedIn(hunks: readonly Hunk[]): number {
  return hunks.reduce(
    (n, h) => n + h.rows.reduce((m, r) => m + (r.sign === '+' ? countMarked(r.text) : 0), 0),
    0,
  );
}

/**
 * How many hidden characters and controls the change from `before` to `after` brings in, counted as its
 * page counts them (diffView's `hidden`): on its added lines, not as the difference of two totals, which
 * a file that loses some as it gains others would cancel out. Most files hold none: no diff is made.
 */
export function hiddenAddedBy(before: Uint8Array | null, after: Uint8Array): number {
  const afterText = utf8Text(after);
  if (afterText === undefined || countMarked(afterText) === 0) return 0;
  const beforeText = before === null ? '' : utf8Text(before);
  if (beforeText === undefined) return 0; // drawn as a binary file: nothing of it reads as text
  const hunks = hunksOf(beforeText, afterText);
  return hunks ? addedIn(hunks) : countMarked(afterText);
}

/** The markup both views of `hunks` would hold, counted before drawing them. */
function markupOf(hunks: readonly Hunk[], labels: DiffLabels): number {
  // each table's caption names the path and both sides, its header both sides again
  let n =
    TABLE_MARKUP + 2 * markupLength(labels.path) + 4 * (markupLength(labels.old) + markupLength(labels.new));
  for (const h of hunks) for (const r of h.rows) n += 2 * markupLength(r.text) + ROW_MARKUP;
  return n;
}

/**
 * The change from `before` to `after` (null: the file does not exist on that side), drawn only when its
 * markup fits in `budget` characters.
 */
export function diffView(
  before: Uint8Array | null,
  after: Uint8Array | null,
  labels: DiffLabels,
  budget = PAGE_DIFF_MARKUP,
): DiffView {
  const size = (b: Uint8Array | null) => (b === null ? 'absent' : `${b.length} bytes`);
  // each side decoded once: the same decode says whether it is text
  const beforeText = before === null ? '' : utf8Text(before);
  const afterText = after === null ? '' : utf8Text(after);
  if (beforeText === undefined || afterText === undefined)
    return { kind: 'note', note: `binary file: ${size(before)} \u2192 ${size(after)}` };
  const hunks = hunksOf(beforeText, afterText);
  if (!hunks)
    return {
      kind: 'note',
      note: `over ${MAX_EDIT} lines changed: too large to draw (${size(before)} \u2192 ${size(after)})`,
      hidden: countMarked(afterText),
    };
  if (hunks.length === 0) return { kind: 'note', note: 'no change: the bytes are identical' };
  const markup = markupOf(hunks, labels);
  if (markup > budget)
    return {
      kind: 'note',
      note: `too large to show here: its diff would be ${mib(markup)} of markup, more than this page has left (${size(before)} \u2192 ${size(after)})`,
      hidden: addedIn(hunks),
      large: true,
    };
  const count = (sign: string) => hunks.reduce((n, h) => n + h.rows.filter((r) => r.sign === sign).length, 0);
  const { path, old, new: now } = labels;
  const split = html`<table class="diff split"><caption class="vh">${path}: ${old} (left) and ${now} (right), side by side</caption><colgroup><col class="ln"><col class="sign"><col><col class="ln"><col class="sign"><col></colgroup><thead><tr><th scope="col" colspan="3">${old}</th><th scope="col" colspan="3">${now}</th></tr></thead><tbody>${hunks.map(
    (h) => html`<tr class="hunk"><td colspan="6">${h.header}</td></tr>${splitRows(h.rows)}`,
  )}</tbody></table>`;
  const unified = html`<table class="diff unified"><caption class="vh">${path}: ${old} to ${now}, unified</caption><colgroup><col class="ln"><col class="ln"><col class="sign"><col></colgroup><thead><tr><th scope="col">${old}</th><th scope="col">${now}</th><th scope="col"><span class="vh">change</span></th><th scope="col"><span class="vh">line</span></th></tr></thead><tbody>${hunks.map(
    (h) => html`<tr class="hunk"><td colspan="4">${h.header}</td></tr>${unifiedRows(h.rows)}`,
  )}</tbody></table>`;
  return { kind: 'text', split, unified, added: count('+'), removed: count('-'), hidden: addedIn(hunks) };
}
