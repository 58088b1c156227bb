// The line of a failed generator's stderr that says what went wrong, for one-line displays (progress
// lines, status, show). Stderr rarely opens with it: a Node stack trace starts where it was thrown
// (`node:internal/modules/cjs/loader:1210`), a Python traceback with `Traceback (most recent call
// last):`, and the message comes further down. So: the last line that reads like an error and is not
// a stack frame, a source excerpt or a location; else the last such line of any kind; else the first.

const TELLING =
  /error|exception|not found|no such|denied|fatal|panic|failed|cannot|can't|unable|refused|invalid|forbidden|killed|abort/i;
/** Stack frames and source excerpts (indented), carets, `file:line` locations, Node's require stack, banners. */
const NOISE = [
  /^\s/,
  /^\^+\s*$/,
  /^\S+:\d+(:\d+)?$/,
  /^Node\.js v\d/,
  /^Traceback \(most recent call last\):$/,
  /^[{}[\]]/,
  /^- \//,
];

export function tellingLine(text: string): string {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const candidates = lines.filter((l) => !NOISE.some((n) => n.test(l)));
  const pick = candidates.findLast((l) => TELLING.test(l)) ?? candidates.at(-1) ?? lines[0] ?? '';
  return pick.trim();
}

/** At most `maxLines` whole last lines of `text` (a partial first line, cut by a byte cap, is dropped). */
export function lastLines(text: string, maxLines: number, cut: boolean): string[] {
  const lines = text.split(/\r?\n/);
  if (cut) lines.shift();
  while (lines.length > 0 && lines.at(-1)!.trim() === '') lines.pop();
  return lines.slice(-maxLines);
}
