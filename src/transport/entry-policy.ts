// Which entries an extraction accepts, decided from the header alone, before a byte is written:
// in-memory names first, then only prefix + allowed contract path, each once, no two equal after NFC
// and case folding, no file where another entry needs a directory, within the entry, file and total
// caps. `admit` records an entry only once every check passed; the first failing check throws.
import { ancestors, foldedPath, pathProblem } from '../core/paths.js';
import { rejectArchive as reject } from './reject-archive.js';
import type { ExtractOptions } from './safe-extract.js';

/** Where an admitted entry goes: into memory, or to staging at `path` below its `dirs` (outermost first). */
export type Admission = { kind: 'memory' } | { kind: 'file'; path: string; dirs: string[] };

export class EntryPolicy {
  #entries = 0;
  #total = 0;
  #sawPrefixed = false;
  #allowed: ReadonlySet<string> | undefined;
  readonly #files = new Set<string>();
  readonly #foldedFiles = new Map<string, string>();
  readonly #foldedDirs = new Map<string, string>();

  /** `inMemory` holds the in-memory entries read so far; the allowed function is given it. */
  constructor(
    private readonly opts: ExtractOptions,
    private readonly inMemory: Map<string, Buffer>,
  ) {}

  /** Check the entry `name` of `size` bytes against every rule, and record it. */
  admit(name: string, size: number): Admission {
    const { opts } = this;
    if (++this.#entries > opts.maxEntries)
      reject('EGJ_ARCHIVE_TOO_MANY', name, `more than ${opts.maxEntries} entries`);
    const problem = pathProblem(name);
    if (problem !== null) reject('EGJ_ARCHIVE_PATH', name, problem);
    if (opts.inMemory !== undefined && Object.hasOwn(opts.inMemory, name)) {
      this.#admitMemory(name, size, opts.inMemory[name]!);
      return { kind: 'memory' };
    }
    if (!name.startsWith(opts.prefix))
      reject('EGJ_ARCHIVE_NOT_ALLOWED', name, `not under ${JSON.stringify(opts.prefix)}`);
    this.#sawPrefixed = true;
    const path = name.slice(opts.prefix.length);
    const relProblem = pathProblem(path);
    if (relProblem !== null) reject('EGJ_ARCHIVE_PATH', name, relProblem);
    if (!this.allowed().has(path)) reject('EGJ_ARCHIVE_NOT_ALLOWED', name, 'not one of the allowed paths');
    if (this.#files.has(path)) reject('EGJ_ARCHIVE_DUPLICATE', name, 'the same path appears twice');
    const folded = foldedPath(path);
    const twin = this.#foldedFiles.get(folded);
    if (twin !== undefined)
      reject('EGJ_ARCHIVE_TWIN', name, `same path as ${JSON.stringify(twin)} after NFC and case folding`);
    if (this.#foldedDirs.has(folded))
      reject('EGJ_ARCHIVE_FILE_DIR', name, 'a file where an earlier entry needs a directory');
    const dirs = ancestors(path);
    for (const dir of dirs) {
      const f = foldedPath(dir);
      const file = this.#foldedFiles.get(f);
      if (file !== undefined)
        reject(
          'EGJ_ARCHIVE_FILE_DIR',
          name,
          `needs ${JSON.stringify(file)} to be a directory, but it is a file`,
        );
      const seen = this.#foldedDirs.get(f);
      if (seen !== undefined && seen !== dir) {
        reject(
          'EGJ_ARCHIVE_TWIN',
          name,
          `directory ${JSON.stringify(dir)} and ${JSON.stringify(seen)} differ only by case or NFC`,
        );
      }
    }
    if (size > opts.maxFileBytes)
      reject('EGJ_ARCHIVE_TOO_LARGE', name, `header size ${size} is over ${opts.maxFileBytes} bytes`);
    this.#addTotal(name, size);
    this.#files.add(path);
    this.#foldedFiles.set(folded, path);
    for (const dir of dirs) this.#foldedDirs.set(foldedPath(dir), dir);
    return { kind: 'file', path, dirs };
  }

  /** The allowed contract paths; the function form is called once, here, and its answer kept. */
  allowed(): ReadonlySet<string> {
    if (this.#allowed === undefined) {
      const a = this.opts.allowed;
      this.#allowed = typeof a === 'function' ? a(this.inMemory) : a;
    }
    return this.#allowed;
  }

  #admitMemory(name: string, size: number, max: number): void {
    if (this.#sawPrefixed) reject('EGJ_ARCHIVE_ORDER', name, 'must come before every file entry');
    if (this.inMemory.has(name)) reject('EGJ_ARCHIVE_DUPLICATE', name, 'the same entry appears twice');
    if (size > max) reject('EGJ_ARCHIVE_TOO_LARGE', name, `header size ${size} is over ${max} bytes`);
    this.#addTotal(name, size);
  }

  #addTotal(name: string, size: number): void {
    this.#total += size;
    if (this.#total > this.opts.maxTotalBytes) {
      reject(
        'EGJ_ARCHIVE_TOO_LARGE',
        name,
        `archive total ${this.#total} is over ${this.opts.maxTotalBytes} bytes`,
      );
    }
  }
}
