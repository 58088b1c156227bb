// The bytes a report page shows, found by digest: an output in out/<key>/ (or objects/), an input in
// objects/ (what an apply replaced) or the working tree, a shadow plane's output, a check log. A file is
// used only when its bytes hash to the digest the job, the receipt or the record names, so a report never
// shows bytes other than the ones the record commits to, whatever out/ or the tree holds now.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { RecordUnreadableError } from '../core/errors.js';
import { pathProblem } from '../core/paths.js';
import { SHA256_HEX, sha256Hex } from '../core/sha256.js';
import { readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';

/** A file above this is summarised on its page, never diffed. */
export const MAX_SHOWN_BYTES = 4 * 1024 * 1024;

export type Found = { kind: 'ok'; bytes: Buffer } | { kind: 'missing' | 'drift' | 'large' | 'bad-path' };

function read(store: Store, file: string): Buffer | 'large' | undefined {
  // most misses are ordinary (an input not in objects/ before apply): no error object for them
  if (!existsSync(file)) return undefined;
  try {
    return readIfExists(store, file, MAX_SHOWN_BYTES);
  } catch (err) {
    // a symlink, a FIFO, a directory or a file over the cap: nothing to show
    if (err instanceof RecordUnreadableError)
      return /over the cap|grew past/.test(err.message) ? 'large' : undefined;
    throw err;
  }
}

/** Told of each file before it is looked at (the gather stamps them: gather-cache.ts). */
export type Seen = (file: string) => void;

/** The first of `files` that exists, judged against `sha256`. */
function firstOf(store: Store, files: readonly string[], sha256: string, look?: Seen): Found {
  let seen: Found = { kind: 'missing' };
  for (const file of files) {
    look?.(file);
    const bytes = read(store, file);
    if (bytes === undefined) continue;
    if (bytes === 'large') {
      seen = { kind: 'large' };
      continue;
    }
    if (sha256Hex(bytes) === sha256) return { kind: 'ok', bytes };
    if (seen.kind === 'missing') seen = { kind: 'drift' };
  }
  return seen;
}

function objectFile(store: Store, sha256: string): string[] {
  return SHA256_HEX.test(sha256) ? [store.layout.object(sha256)] : [];
}

/** Bytes kept between the gather and the pages of one report: small files only, up to a total. */
const MEMO_FILE_BYTES = 256 * 1024;
const MEMO_TOTAL_BYTES = 64 * 1024 * 1024;

/**
 * The finder of one report: what the gather found (and hashed) is kept, so drawing a page does not read
 * and hash the same bytes again; the page then shows exactly the bytes the gather judged.
 */
export class ReportBytes {
  readonly #memo = new Map<string, Found>();
  #kept = 0;

  constructor(readonly store: Store) {}

  #find(files: readonly string[], sha256: string, look?: Seen): Found {
    const id = `${files.join('\0')}\0${sha256}`;
    const known = this.#memo.get(id);
    if (known) {
      for (const file of files) look?.(file);
      return known;
    }
    const found = firstOf(this.store, files, sha256, look);
    if (found.kind === 'ok' && found.bytes.length <= MEMO_FILE_BYTES && this.#kept < MEMO_TOTAL_BYTES) {
      this.#memo.set(id, found);
      this.#kept += found.bytes.length;
    }
    return found;
  }

  output(key: string, path: string, sha256: string, look?: Seen): Found {
    if (pathProblem(path) !== null || !SHA256_HEX.test(key)) return { kind: 'bad-path' };
    return this.#find(
      [join(this.store.layout.outDir(key), path), ...objectFile(this.store, sha256)],
      sha256,
      look,
    );
  }

  /** The bytes a job read at `path` before generation: still in the tree until applied, then kept in objects/. */
  input(path: string, sha256: string, look?: Seen): Found {
    if (pathProblem(path) !== null) return { kind: 'bad-path' };
    return this.#find([join(this.store.root, path), ...objectFile(this.store, sha256)], sha256, look);
  }

  shadowOutput(filesDir: string, path: string, sha256: string): Found {
    if (pathProblem(path) !== null) return { kind: 'bad-path' };
    return this.#find([join(filesDir, path)], sha256);
  }

  /** A check log, stored by its sha256 in objects/. */
  log(sha256: string): Found {
    return this.#find(objectFile(this.store, sha256), sha256);
  }
}
