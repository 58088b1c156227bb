// Which paths a new job allows that another job already allows: two jobs writing one file fight (the
// second to apply finds the file changed and goes stale), so mint warns and names them. Looks at the
// jobs queued, running or received (a job file each, parsed as plain JSON, no schema) and at the other
// jobs of the same mint. A warning only: nothing is refused.
import type { Job } from '../core/job.js';
import { terminalText } from '../core/terminal-text.js';
import { peekRecord } from '../store/durable.js';
import { keysIn } from '../store/job-states.js';
import type { Store } from '../store/store.js';

export interface Overlap {
  path: string;
  /** The jobs being minted that allow it. */
  minting: string[];
  /** Jobs already in the store (queued, running or received) that allow it, with their state. */
  others: Array<{ key: string; state: 'queue' | 'running' | 'received' }>;
}

const LIVE = ['queue', 'running', 'received'] as const;

/** The allowed paths of a stored job file, or none when it cannot be read as a job. */
function allowedOf(bytes: Buffer | undefined): string[] {
  if (bytes === undefined) return [];
  try {
    const doc = JSON.parse(bytes.toString('utf8')) as { inputs?: Array<{ path?: unknown }> };
    return Array.isArray(doc.inputs)
      ? doc.inputs.map((i) => i?.path).filter((p) => typeof p === 'string')
      : [];
  } catch {
    return [];
  }
}

/** Paths allowed by more than one of `jobs`, or by one of them and a live job already stored. */
export function overlaps(store: Store, jobs: readonly Job[]): Overlap[] {
  const minting = new Map<string, string[]>();
  const ours = new Set(jobs.map((j) => j.key));
  for (const job of jobs)
    for (const { path } of job.inputs) {
      const keys = minting.get(path);
      if (keys === undefined) minting.set(path, [job.key]);
      else if (!keys.includes(job.key)) keys.push(job.key);
    }
  const others = new Map<string, Overlap['others']>();
  for (const state of LIVE)
    for (const key of keysIn(store, state)) {
      if (ours.has(key)) continue; // the same job minted again is no other job
      for (const path of allowedOf(peekRecord(store, store.layout.jobFile(state, key)))) {
        if (!minting.has(path)) continue;
        const list = others.get(path) ?? [];
        list.push({ key, state });
        others.set(path, list);
      }
    }
  const found: Overlap[] = [];
  for (const [path, keys] of minting) {
    const stored = others.get(path) ?? [];
    if (keys.length > 1 || stored.length > 0) found.push({ path, minting: keys, others: stored });
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** One stderr line per overlapping path (at most `max`, then a count). */
export function overlapLines(found: readonly Overlap[], max = 10): string {
  const lines = found.slice(0, max).map((o) => {
    const names = [
      ...(o.minting.length > 1 ? [`${o.minting.length} jobs of this mint`] : []),
      ...o.others
        .slice(0, 3)
        .map((x) => `${x.state === 'queue' ? 'queued' : x.state} job ${x.key.slice(0, 12)}`),
      ...(o.others.length > 3 ? [`${o.others.length - 3} more`] : []),
    ];
    return `genjob: warning: ${terminalText(o.path)} is allowed by ${names.join(', ')}; jobs writing one file fight (the second to apply goes stale)\n`;
  });
  if (found.length > max)
    lines.push(`genjob: warning: … and ${found.length - max} more path(s) allowed twice\n`);
  return lines.join('');
}
