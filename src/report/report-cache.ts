// What the last report into a directory read and wrote (DIR/.report-cache.json), so the next one does
// the least work. Per job: every file its gathering read that can change under its name (gather.ts says
// which), stamped (inode, size, mtime and ctime, or absent), and what it found; a job whose files all
// stamp the same is taken from here instead of being read, parsed and hashed again, as git's index trusts
// a stat (any write changes the ctime). A job's check states are kept the same way, under the checks
// plane's context (bindings, HEAD's tree) and the stamps of the files they were read from, and with them
// the digest of the job's page model. Per page: its stamp and the digest its last line names, so an
// untouched page is known by one lstat. Shadow answers are never kept. The cache stands on the
// renderer's identity, the repository and its trust file: another of any is a fresh start.
// The file lies in the report's directory, which a branch can commit (.gen/report/), so every line is
// sealed with an HMAC under the user's own secret, kept outside every repository ($XDG_CACHE_HOME/genjob):
// a line genjob did not write here for this user, repository and renderer is not read, and a cache file
// committed, copied or edited by anyone else only costs a gathering.
// Below its header the file has one line per save: every entry that save wrote, as one JSON array under
// one seal (one HMAC and one parse per save, not per entry), the last entry of a name winning: a report
// that changed a few entries appends them instead of writing the whole file again. Every entry carries
// its own stamps, so a lost or torn line only costs its jobs a gathering again (an older entry of the
// same name no longer stamps as its files do).
import { lstatSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { macOf } from '../core/mac.js';
import { sha256Hex } from '../core/sha256.js';
import { nodeFs } from '../store/fs-port.js';
import { readRecordFile } from '../store/read-record.js';
import { trustFilePath } from '../trust/trust-file.js';
import type { ReportCheck, ReportJob } from './model.js';
import { writePage } from './page-file.js';

export const CACHE_FILE = '.report-cache.json';
/** Far above a report's cache (~1 KiB a job); a bigger file is ignored and the report starts afresh. */
const MAX_CACHE_BYTES = 512 * 1024 * 1024;

/** The first line of the file: what the lines below it are. */
const FORMAT = 'genjob/report-cache@4';
/** What a seal covers besides its line: this file's kind, so the secret's other uses never collide. */
const DOMAIN = 'genjob-report-cache-v1';
/** Hex digits of a line's seal (128 bits), then a space, then the line's JSON: an array of entries. */
const SEAL = 32;

export interface CachedJob {
  /** The state directory and job file the key was found in. */
  where: string;
  stamps: Array<[string, Stamp]>;
  /** The job as gathered; its checks and shadow answers are never kept here (always asked afresh). */
  job: CachedReportJob;
  /** The job's check states, under the check context and the stamps of the records' files they were read with. */
  checks?: { context: string; stamps: Array<[string, Stamp]>; list: ReportCheck[] };
  /** The digest of the job's page model (this job, these checks, no shadow answer), once its page was judged. */
  print?: string;
}

export type CachedReportJob = Omit<ReportJob, 'checks' | 'shadows'>;

const MAYBE = { throwIfNoEntry: false } as const;

/**
 * A file's identity and change stamp: inode, size, mtime and ctime (ms with their fraction: µs), kept as
 * numbers so a check compares them as lstat gives them (no number is printed to compare it); '-' when
 * there is no file, '-/' when its directory is absent too (Stamps).
 */
export type Stamp = readonly [number, number, number, number] | '-' | '-/';

/** `path`'s stamp, taken now. */
export function stampOf(path: string): Stamp {
  const st = lstatSync(path, MAYBE);
  return st === undefined ? '-' : [st.ino, st.size, st.mtimeMs, st.ctimeMs];
}

/** Whether `path` stamps as `stamp` says (a file: without making a stamp to compare). */
function holds(path: string, stamp: Stamp): boolean {
  const st = lstatSync(path, MAYBE);
  if (st === undefined) return stamp === '-';
  return (
    Array.isArray(stamp) &&
    st.ino === stamp[0] &&
    st.size === stamp[1] &&
    st.mtimeMs === stamp[2] &&
    st.ctimeMs === stamp[3]
  );
}

/** Two stamps say the same. */
export function sameStamp(a: Stamp | undefined, b: Stamp): boolean {
  if (typeof a === 'string' || typeof b === 'string' || a === undefined) return a === b;
  return a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];
}

/** The stamp of a file absent because its directory is: it holds while the directory is absent. */
const NO_DIR = '-/' satisfies Stamp;

/**
 * The stamps of one gathering. A file absent together with its directory is stamped `-/`, and such a
 * stamp is checked by one lstat of the directory for every file in it (a checks directory no job has
 * yet): nothing can appear in a directory that does not exist. A directory is remembered absent only to
 * check stamps; a new stamp is taken from an lstat made after the file's own, so it never claims more
 * than was true before the file is read.
 */
export class Stamps {
  /** Directory -> whether it was there when first looked at in this gathering. */
  readonly #dirs = new Map<string, boolean>();

  #dirThere(dir: string): boolean {
    let there = this.#dirs.get(dir);
    if (there === undefined) {
      there = lstatSync(dir, MAYBE) !== undefined;
      this.#dirs.set(dir, there);
    }
    return there;
  }

  /** `path`'s stamp, taken now. */
  of(path: string): Stamp {
    const stamp = stampOf(path);
    if (stamp !== '-') return stamp;
    const dir = dirname(path);
    // a directory seen here in this gathering is taken as still here: the plain stamp is the safe one
    if (this.#dirs.get(dir) === true) return stamp;
    const there = lstatSync(dir, MAYBE) !== undefined;
    this.#dirs.set(dir, there);
    return there ? stamp : NO_DIR;
  }

  /** Every file still stamps as it did. */
  fresh(stamps: ReadonlyArray<readonly [string, Stamp]>): boolean {
    for (const [path, stamp] of stamps)
      if (stamp === NO_DIR ? this.#dirThere(dirname(path)) : !holds(path, stamp)) return false;
    return true;
  }
}

const NEWLINE = 0x0a;
const SPACE = 0x20;

/** Each line's [start, end) in `bytes`, split at every newline (a last line without one included). */
function linesOf(bytes: Buffer): Array<[number, number]> {
  const lines: Array<[number, number]> = [];
  let start = 0;
  for (let nl = bytes.indexOf(NEWLINE); nl !== -1; nl = bytes.indexOf(NEWLINE, start)) {
    lines.push([start, nl]);
    start = nl + 1;
  }
  lines.push([start, bytes.length]);
  return lines;
}

/** An entry of the file: a job's, or a page's. */
type Line = { j: CachedJob } | { p: [string, Stamp, string] };

export class ReportCache {
  /** Entries added, replaced or changed since the file was read or written: only they are appended. */
  readonly #dirtyJobs = new Set<string>();
  readonly #dirtyPages = new Set<string>();
  /** The file must be written whole: none yet, another format, a torn end, or an entry dropped. */
  #whole: boolean;
  /**
   * Entries in the file now, superseded ones included: once they outnumber the live ones by a quarter, the
   * file is written whole again (a load never parses much more than it keeps).
   */
  #entries: number;
  /**
   * Jobs this gathering took wholly from the cache (the job and its checks), by key: their page digest
   * stands. A map, not a WeakSet: a thousand weak entries cost the collector more than the report keeps.
   */
  readonly #taken = new Map<string, ReportJob>();

  constructor(
    readonly id: string,
    /** The user's secret the lines are sealed with. */
    readonly secret: Buffer,
    readonly jobs = new Map<string, CachedJob>(),
    /** Page name (`index.html`, `jobs/<key>.html`) → [its stamp, the digest its last line names]. */
    readonly pages = new Map<string, [Stamp, string]>(),
    /** Entries in the file it was loaded from; none: there is no such file yet. */
    entries?: number,
  ) {
    this.#whole = entries === undefined;
    this.#entries = entries ?? 0;
  }

  /** Whether the next save writes anything. */
  get changed(): boolean {
    return this.#whole || this.#dirtyJobs.size > 0 || this.#dirtyPages.size > 0;
  }

  /** What the cache stands on: the renderer's identity (it covers the gather's code), the repository, its trust file. */
  static idOf(renderId: string, root: string): string {
    return sha256Hex(JSON.stringify([renderId, root, stampOf(trustFilePath(root))]));
  }

  /** The seal of `text` (a line's JSON, or its UTF-8 bytes as read) in the cache `id` under `secret`. */
  static seal(secret: Buffer, id: string, text: string | Uint8Array): string {
    return macOf(secret, DOMAIN, id, text).slice(0, SEAL);
  }

  /** The cache in `dir` when this user wrote it under `id` (`secret` is the user's); else an empty one. */
  static load(dir: string, id: string, secret: Buffer): ReportCache {
    let bytes: Buffer;
    try {
      // the report's directory may be a branch's: no link followed, no FIFO waited on, no read without end
      const read = readRecordFile(nodeFs, join(dir, CACHE_FILE), MAX_CACHE_BYTES);
      if (read === undefined) return new ReportCache(id, secret);
      bytes = read;
    } catch {
      return new ReportCache(id, secret); // none yet, or unreadable: start afresh
    }
    // Lines are sealed and split as bytes: a seal over a 2 MB string first converts it to UTF-8, which
    // costs a fresh process ten times the HMAC itself; only a line whose seal holds is decoded and parsed.
    const lines = linesOf(bytes);
    try {
      const [start, end] = lines[0]!; // linesOf gives at least one line, empty for an empty file
      const head = JSON.parse(bytes.toString('utf8', start, end)) as { format?: unknown; id?: unknown };
      if (head.format !== FORMAT || head.id !== ReportCache.seal(secret, id, ''))
        return new ReportCache(id, secret);
    } catch {
      return new ReportCache(id, secret);
    }
    const jobs = new Map<string, CachedJob>();
    const pages = new Map<string, [Stamp, string]>();
    let count = 0;
    for (let i = 1; i < lines.length; i++) {
      const [start, end] = lines[i]!;
      if (start === end) continue;
      let entries: unknown;
      try {
        // not sealed by this user for this cache (written by another, or torn by a crash): not parsed
        const json = bytes.subarray(start + SEAL + 1, end);
        if (
          bytes[start + SEAL] === SPACE &&
          bytes.toString('latin1', start, start + SEAL) === ReportCache.seal(secret, id, json)
        )
          entries = JSON.parse(json.toString('utf8'));
      } catch {
        // a line of a shape this build does not read: its entries are gathered or judged again
      }
      if (!Array.isArray(entries)) {
        count += 1; // counted, so lines no one reads are dropped when the file is next written whole
        continue;
      }
      count += entries.length;
      for (const entry of entries as Line[]) {
        try {
          if ('j' in entry) jobs.set(entry.j.job.key, entry.j);
          else pages.set(entry.p[0], [entry.p[1], entry.p[2]]);
        } catch {
          // an entry of a shape this build does not read: its job or page is gathered or judged again
        }
      }
    }
    const cache = new ReportCache(id, secret, jobs, pages, count);
    // a torn end would swallow the next line appended: write the whole file instead
    if (bytes.at(-1) !== NEWLINE) cache.#whole = true;
    return cache;
  }

  setJob(key: string, c: CachedJob): void {
    if (this.jobs.get(key) === c) return;
    this.jobs.set(key, c);
    this.#dirtyJobs.add(key);
  }

  setChecks(key: string, checks: NonNullable<CachedJob['checks']>): void {
    const entry = this.jobs.get(key);
    if (!entry) return;
    entry.checks = checks;
    delete entry.print;
    this.#dirtyJobs.add(key);
  }

  /** `job` was taken from its entry as it is, checks included (gather.ts). */
  taken(job: ReportJob): void {
    this.#taken.set(job.key, job);
  }

  /** The page digest of a job taken whole from the cache that has no shadow answer; else undefined. */
  printOf(job: ReportJob): string | undefined {
    return this.#taken.get(job.key) === job && job.shadows.length === 0
      ? this.jobs.get(job.key)?.print
      : undefined;
  }

  /** Remember `job`'s page digest, when it is one the entry can stand for (no shadow answer is kept). */
  setPrint(job: ReportJob, print: string): void {
    const entry = this.jobs.get(job.key);
    if (!entry || job.shadows.length > 0 || entry.print === print) return;
    entry.print = print;
    this.#dirtyJobs.add(job.key);
  }

  /** Keep only these jobs' entries. */
  keepJobs(keys: ReadonlySet<string>): void {
    for (const key of this.jobs.keys())
      if (!keys.has(key)) {
        this.jobs.delete(key);
        this.#whole = true;
      }
  }

  setPage(name: string, stamp: Stamp, fingerprint: string): void {
    const had = this.pages.get(name);
    if (had && sameStamp(had[0], stamp) && had[1] === fingerprint) return;
    this.pages.set(name, [stamp, fingerprint]);
    this.#dirtyPages.add(name);
  }

  dropPage(name: string): void {
    if (this.pages.delete(name)) this.#whole = true;
  }

  /** One sealed line holding these entries. */
  #line(jobs: Iterable<string>, pages: Iterable<string>): string {
    const entries: Line[] = [];
    for (const key of jobs) {
      const j = this.jobs.get(key);
      if (j) entries.push({ j });
    }
    for (const name of pages) {
      const p = this.pages.get(name);
      if (p) entries.push({ p: [name, p[0], p[1]] });
    }
    const json = JSON.stringify(entries);
    return `${ReportCache.seal(this.secret, this.id, json)} ${json}\n`;
  }

  async save(dir: string): Promise<void> {
    if (!this.changed) return;
    const file = join(dir, CACHE_FILE);
    const adds = this.#dirtyJobs.size + this.#dirtyPages.size;
    const live = this.jobs.size + this.pages.size;
    if (!this.#whole && this.#entries + adds <= live + live / 4 + 64) {
      await appendFile(file, this.#line(this.#dirtyJobs, this.#dirtyPages));
      this.#entries += adds;
    } else {
      const head = JSON.stringify({ format: FORMAT, id: ReportCache.seal(this.secret, this.id, '') });
      await writePage(file, dir, `${head}\n${this.#line(this.jobs.keys(), this.pages.keys())}`, true);
      this.#entries = live;
      this.#whole = false;
    }
    this.#dirtyJobs.clear();
    this.#dirtyPages.clear();
  }
}
