// The gather's memory between two reports into one directory (DIR/.gather-cache.json): per job, every
// file its gathering read or looked for, stamped (inode, size, mtime and ctime in ns, or absent), and
// what it found. A job whose files all stamp the same is taken from here instead of read, parsed and
// hashed again, as git's index trusts a stat; ctime changes with any write, so a rewritten file is never
// missed. Check verdicts and shadow answers are not kept: they are asked afresh every time.
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../core/sha256.js';
import { trustFilePath } from '../trust/trust-file.js';
import type { ReportJob } from './model.js';
import { writePage } from './page-file.js';

export const CACHE_FILE = '.gather-cache.json';

export interface CachedJob {
  /** The state directory and job file the key was found in. */
  where: string;
  stamps: Array<[string, string]>;
  job: ReportJob;
}

/** A file's identity and change stamp (times in ms with their fraction: µs), or '-' when there is none. */
export function stampOf(path: string): string {
  const st = lstatSync(path, { throwIfNoEntry: false });
  return st === undefined ? '-' : `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

export function fresh(c: CachedJob): boolean {
  return c.stamps.every(([path, stamp]) => stampOf(path) === stamp);
}

/** What the whole cache stands on: the renderer's identity (it covers the gather's code), the repository, its trust file. */
export function cacheId(renderId: string, root: string): string {
  return sha256Hex(JSON.stringify([renderId, root, stampOf(trustFilePath(root))]));
}

/** The jobs cached in `dir` by a gather of the same identity (renderer, repository, trust); none otherwise. */
export function loadGatherCache(dir: string, id: string): Map<string, CachedJob> {
  try {
    const doc = JSON.parse(readFileSync(join(dir, CACHE_FILE), 'utf8')) as { id?: unknown; jobs?: unknown };
    if (doc.id !== id || !Array.isArray(doc.jobs)) return new Map();
    return new Map((doc.jobs as CachedJob[]).map((c) => [c.job.key, c]));
  } catch {
    return new Map(); // none yet, or unreadable: gather everything
  }
}

export function saveGatherCache(dir: string, id: string, jobs: ReadonlyMap<string, CachedJob>): void {
  writePage(join(dir, CACHE_FILE), dir, JSON.stringify({ id, jobs: [...jobs.values()] }), true);
}
