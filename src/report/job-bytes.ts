// Read what a job's page draws from bytes: each output against its input, each shadow answer against
// the live one, the last lines of each check log. Only files whose bytes hash to the digests the model
// names are used (bytes.ts), so the page shows exactly what its fingerprint covers.
import { SHA256_HEX } from '../core/sha256.js';
import { ShadowStore } from '../shadow/shadow-store.js';
import type { ReportBytes } from './bytes.js';
import { type DiffView, diffView } from './diff-view.js';
import type { ReportJob } from './model.js';
import type { JobPageBytes } from './render-job.js';

/** Lines of a log shown on the job page; the log page has it all. */
export const LOG_TAIL_LINES = 20;

export function logTail(bytes: Uint8Array, lines = LOG_TAIL_LINES): string {
  const text = Buffer.from(bytes).toString('utf8').replace(/\n$/, '');
  return text.split('\n').slice(-lines).join('\n');
}

export function jobPageBytes(bytes: ReportBytes, job: ReportJob): JobPageBytes {
  const diffs = new Map<string, DiffView>();
  const outputs = new Map<string, Buffer>();
  for (const f of job.files) {
    const out = bytes.output(job.key, f.path, f.sha256);
    if (out.kind !== 'ok') continue;
    outputs.set(f.path, out.bytes);
    const input = f.input === null ? null : bytes.input(f.path, f.input);
    diffs.set(f.path, diffView(input?.kind === 'ok' ? input.bytes : null, out.bytes));
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
      else views.set(f.path, diffView(live, other === null ? null : other.bytes));
    }
    shadowDiffs.set(s.plane, views);
  }
  return { diffs, logTails, shadowDiffs };
}
