// What the last report into a directory read and wrote (DIR/.report-cache.json), so the next one does
// the least work. Per job: every file its gathering read that can change under its name (gather.ts says
// which), stamped (inode, size, mtime and ctime, or absent), and what it found; a job whose files all
// stamp the same is taken from here instead of being read, parsed and hashed again, as git's index trusts
// a stat (any write changes the ctime). A job's check states are kept the same way, under the checks
// plane's context (bindings, HEAD's tree) and the stamps of the files they were read from. Per page: its
// stamp and the digest its last line names, so an untouched page is known by one lstat. Shadow answers
// are never kept. The cache stands on the renderer's identity, the repository and its trust file:
// another of any is a fresh start.
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../core/sha256.js';
import { trustFilePath } from '../trust/trust-file.js';
import type { ReportCheck, ReportJob } from './model.js';
import { writePage } from './page-file.js';

export const CACHE_FILE = '.report-cache.json';

export interface CachedJob {
  /** The state directory and job file the key was found in. */
  where: string;
  stamps: Array<[string, string]>;
  job: ReportJob;
  /** The job's check states, under the check context and the stamps of the records' files they were read with. */
  checks?: { context: string; stamps: Array<[string, string]>; list: ReportCheck[] };
}

/** A file's identity and change stamp (times in ms with their fraction: µs), or '-' when there is none. */
export function stampOf(path: string): string {
  const st = lstatSync(path, { throwIfNoEntry: false });
  return st === undefined ? '-' : `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** Every file still stamps as it did. */
export function fresh(stamps: ReadonlyArray<readonly [string, string]>): boolean {
  return stamps.every(([path, stamp]) => stampOf(path) === stamp);
}

export class ReportCache {
  /** Set whenever an entry is added, replaced or dropped: only then is the file written again. */
  changed = false;

  constructor(
    readonly id: string,
    readonly jobs = new Map<string, CachedJob>(),
    /** Page name (`index.html`, `jobs/<key>.html`) → [its stamp, the digest its last line names]. */
    readonly pages = new Map<string, [string, string]>(),
  ) {}

  /** What the cache stands on: the renderer's identity (it covers the gather's code), the repository, its trust file. */
  static idOf(renderId: string, root: string): string {
    return sha256Hex(JSON.stringify([renderId, root, stampOf(trustFilePath(root))]));
  }

  /** The cache in `dir` when it was written under `id`; else an empty one. */
  static load(dir: string, id: string): ReportCache {
    try {
      const doc = JSON.parse(readFileSync(join(dir, CACHE_FILE), 'utf8')) as {
        id?: unknown;
        jobs?: CachedJob[];
        pages?: Array<[string, [string, string]]>;
      };
      if (doc.id === id && Array.isArray(doc.jobs) && Array.isArray(doc.pages))
        return new ReportCache(id, new Map(doc.jobs.map((c) => [c.job.key, c])), new Map(doc.pages));
    } catch {
      // none yet, or unreadable: start afresh
    }
    return new ReportCache(id);
  }

  setJob(key: string, c: CachedJob): void {
    if (this.jobs.get(key) !== c) this.changed = true;
    this.jobs.set(key, c);
  }

  setChecks(key: string, checks: NonNullable<CachedJob['checks']>): void {
    const entry = this.jobs.get(key);
    if (!entry) return;
    entry.checks = checks;
    this.changed = true;
  }

  /** Keep only these jobs' entries. */
  keepJobs(keys: ReadonlySet<string>): void {
    for (const key of this.jobs.keys())
      if (!keys.has(key)) {
        this.jobs.delete(key);
        this.changed = true;
      }
  }

  setPage(name: string, stamp: string, fingerprint: string): void {
    const had = this.pages.get(name);
    if (had?.[0] === stamp && had[1] === fingerprint) return;
    this.pages.set(name, [stamp, fingerprint]);
    this.changed = true;
  }

  dropPage(name: string): void {
    if (this.pages.delete(name)) this.changed = true;
  }

  async save(dir: string): Promise<void> {
    if (!this.changed) return;
    const doc = { id: this.id, jobs: [...this.jobs.values()], pages: [...this.pages] };
    await writePage(join(dir, CACHE_FILE), dir, JSON.stringify(doc), true);
    this.changed = false;
  }
}
