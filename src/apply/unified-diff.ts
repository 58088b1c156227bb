// Unified diff of the changes an apply (or a revert) would make, for `apply --dry-run --diff` (and of two
// planes' answers, for `compare --diff`).
// Text goes through jsdiff's createTwoFilesPatch with a/ b/ names (/dev/null for a created or deleted file);
// a file that is not UTF-8 text (a NUL byte, or invalid UTF-8) is summarised as "binary file changed".
import { createTwoFilesPatch } from 'diff';
import { tagTexts } from '../core/hidden-chars.js';
import { countMarked } from '../core/marked-chars.js';
import { utf8Text } from '../core/utf8-text.js';

export interface FileChange {
  path: string;
  before: Uint8Array | null;
  after: Uint8Array | null;
}

/** `labels`: the prefixes of the two sides' names (git's a/ and b/ unless told, e.g. live/ and shadow:b/). */
export function fileDiff(change: FileChange, labels = { before: 'a', after: 'b' }): string {
  const from = change.before === null ? '/dev/null' : `${labels.before}/${change.path}`;
  const to = change.after === null ? '/dev/null' : `${labels.after}/${change.path}`;
  // a leading BOM is kept: a file that gains or loses one changes, and the diff must say so
  const before = change.before === null ? '' : utf8Text(change.before);
  const after = change.after === null ? '' : utf8Text(change.after);
  if (before === undefined || after === undefined) {
    const sizes = `${change.before?.length ?? 0} → ${change.after?.length ?? 0} bytes`;
    return `--- ${from}\n+++ ${to}\nbinary file changed: ${change.path} (${sizes})\n`;
  }
  const patch = createTwoFilesPatch(from, to, before, after);
  // jsdiff opens with a "=====" rule line that git and patch(1) do not need
  return patch.replace(/^=+\n/, '');
}

export function unifiedDiff(
  changes: readonly FileChange[],
  labels?: { before: string; after: string },
): string {
  return changes.map((c) => fileDiff(c, labels)).join('');
}

/** Texts spelled by tag characters, each JSON-quoted (printable ASCII then: safe on a terminal). */
export function tagList(texts: readonly string[]): string {
  return texts.map((t) => JSON.stringify(t)).join(', ');
}

/**
 * The line a printed diff ends with when its added lines hold hidden characters (bidi controls, invisible
 * code points, controls and line separators: the set the report marks, core/marked-chars.ts), or
 * undefined: the terminal shows each as an escape, which a long diff can bury. Runs of tag characters are spelled out (printable ASCII: safe on a terminal), since a
 * run of escapes cannot be read.
 */
export function hiddenWarning(diff: string): string | undefined {
  let hidden = 0;
  const spelled: string[] = [];
  for (const line of diff.split('\n'))
    if (line.startsWith('+') && !line.startsWith('+++ ')) {
      hidden += countMarked(line);
      spelled.push(...tagTexts(line));
    }
  if (hidden === 0) return undefined;
  const tags = spelled.length === 0 ? '' : `; its tag characters spell ${tagList(spelled)}`;
  return `warning: the diff adds ${hidden} hidden character(s) (bidirectional controls, invisible code points or control characters, shown as \\u escapes): they can make code read differently from how it runs${tags}`;
}

/** A diff as printed: itself, then its hidden-character warning (when it has one) on a line of its own. */
export function withHiddenWarning(diff: string): string {
  const warning = hiddenWarning(diff);
  return warning ? `${diff}${diff.endsWith('\n') ? '' : '\n'}${warning}\n` : diff;
}
