// Read what a job's page draws from bytes: each output against its input, each shadow answer against
// the live one, the last lines of each check log. Only files whose bytes hash to the digests the model
// names are used (bytes.ts), so the page shows exactly what its fingerprint covers. What the diffs draw
// shares one budget of markup per page (diff-view.ts): a file past what is left is summarised.
import { SHA256_HEX } from '../core/sha256.js';
import { ShadowStore } from '../shadow/shadow-store.js';
import type { ReportBytes } from './bytes.js';
import { type DiffLabels, type DiffView, diffView, PAGE_DIFF_MARKUP } from './diff-view.js';
import type { ReportJob } from './model.js';
import type { JobPageBytes } from './render-job.js';

/** Lines of a log shown on the job page; the log page has it all. */
export const LOG_TAIL_LINES = 20;
/** At most this many characters of those lines, the last ones: a log's line can be megabytes long. */
export const LOG_TAIL_CHARS = 4096;

/** The last lines of a log, cut to their last LOG_TAIL_CHARS characters (then led by `…`). */
export function logTail(bytes: Uint8Array, lines = LOG_TAIL_LINES): string {
  // only the log's end is decoded: LOG_TAIL_CHARS characters are at most four bytes each, plus a newline
  const from = Math.max(0, bytes.length - 4 * LOG_TAIL_CHARS - 2);
  const all = Buffer.from(bytes.subarray(from)).toString('utf8').replace(/\n$/, '').split('\n');
  // the first line kept began before the bytes decoded
  let cut = from > 0 && all.length <= lines;
  let tail = all.slice(-lines).join('\n');
  if (tail.length > LOG_TAIL_CHARS) {
    tail = tail.slice(-LOG_TAIL_CHARS);
    cut = true;
  }
  return cut ? `\u2026${tail}` : tail;
}

export function jobPageBytes(bytes: ReportBytes, job: ReportJob): JobPageBytes {
  const diffs = new Map<string, DiffView>();
  const outputs = new Map<string, Buffer>();
  let left = PAGE_DIFF_MARKUP;
  const draw = (before: Uint8Array | null, after: Uint8Array | null, labels: DiffLabels): DiffView => {
    const v = diffView(before, after, labels, left);
    if (v.kind === 'text') left -= v.split.markup.length + v.unified.markup.length;
    return v;
  };
  for (const f of job.files) {
    const out = bytes.output(job.key, f.path, f.sha256);
    if (out.kind !== 'ok') continue;
    outputs.set(f.path, out.bytes);
    const input = f.input === null ? null : bytes.input(f.path, f.input);
    diffs.set(
      f.path,
      draw(input?.kind === 'ok' ? input.bytes : null, out.bytes, {
        path: f.path,
        old: 'before',
        new: 'after',
      }),
    );
  }
  const logTails = new Map<string, string>();
  for (const c of job.checks)
    for (const a of c.attempts) {
      if (!a.log || !SHA256_HEX.test(a.log) || logTails.has(a.log)) continue;
      const log = bytes.log(a.log);
      if (log.kind === 'ok') logTails.set(a.log, logTail(log.bytes));
    }
  const shadowDiffs = new Map<string, Map<string, DiffView>>();
  for (const s of job.shadows) {
    const plane = new ShadowStore(bytes.store, s.plane.replace(/^shadow:/, ''));
    const views = new Map<string, DiffView>();
    for (const f of s.files) {
      if (f.live === f.shadow) continue;
      const live = f.live === null ? null : outputs.get(f.path);
      const other = f.shadow === null ? null : bytes.shadowOutput(plane.filesDir(job.key), f.path, f.shadow);
      if (live === undefined || (other !== null && other.kind !== 'ok'))
        views.set(f.path, { kind: 'note', note: 'the bytes of one side are not at hand: not drawn' });
      else
        views.set(
          f.path,
          draw(live, other === null ? null : other.bytes, { path: f.path, old: 'live', new: s.plane }),
        );
    }
    shadowDiffs.set(s.plane, views);
  }
  return { diffs, logTails, shadowDiffs };
}
