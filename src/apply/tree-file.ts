// Reading and replacing one repository file through store.fs, never through a symlink.
// Replace = temp file ".genjob-tmp-*" in the target's directory (O_CREAT|O_EXCL|O_NOFOLLOW) → write →
// fchmod → fsync → re-check the target still holds `expected` → rename (or link, for a file that must
// not exist yet, so a racing create is never clobbered) → fsync the directory. A crash leaves the target
// whole (old or new bytes) plus at most one torn temp, which sweepTornTemps() removes.
import { constants } from 'node:fs';
import { join } from 'node:path';
import { errnoOf, IoError, RejectedError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { fsyncDir, writeTempFile } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { type CurrentFile, staleError } from './apply-plan.js';
import { resolveRepoPath, UnsafeRepoPathError } from './repo-path.js';

/** Every temp file genjob puts next to a repository file starts with this; recovery deletes them. */
export const TREE_TMP_PREFIX = '.genjob-tmp-';

const CHUNK = 1024 * 1024;

/** Read a whole regular file without following a symlink at its last component. Throws raw errno errors. */
export function readRegular(store: Store, abs: string): Buffer {
  const { fs } = store;
  const fd = fs.openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    if (!fs.fstatSync(fd).isFile())
      throw Object.assign(new Error(`${abs}: not a regular file`), { code: 'EFTYPE' });
    const chunks: Buffer[] = [];
    for (;;) {
      const buf = Buffer.allocUnsafe(CHUNK);
      const n = fs.readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) break;
      chunks.push(n === CHUNK ? buf : buf.subarray(0, n));
    }
    return Buffer.concat(chunks);
  } finally {
    fs.closeSync(fd);
  }
}

/** The bytes and permission bits of the regular file at contract path `path`, or null when absent. No writes. */
export function readTreeFile(store: Store, path: string): { bytes: Buffer; mode: number } | null {
  const target = resolveRepoPath(store, path, { create: false });
  if (target.file === null) return null;
  try {
    return { bytes: readRegular(store, target.abs), mode: target.file.mode & 0o777 };
  } catch (err) {
    const errno = errnoOf(err);
    if (errno === 'ENOENT') return null;
    if (errno === 'ELOOP') throw new UnsafeRepoPathError(path, 'the target is a symlink');
    if (errno === 'EFTYPE') throw new UnsafeRepoPathError(path, 'the target is not a regular file');
    throw new IoError('read', target.abs, err);
  }
}

/** The digest and mode of what the repository holds at `path` now (nulls when absent). No writes. */
export function currentFile(store: Store, path: string): CurrentFile {
  const file = readTreeFile(store, path);
  return file === null ? { sha256: null, mode: null } : { sha256: sha256Hex(file.bytes), mode: file.mode };
}

/** The bytes of objects/<sha256>, checked against their name. */
export function readObject(store: Store, sha256: string): Buffer {
  const file = store.layout.object(sha256);
  let bytes: Buffer;
  try {
    bytes = readRegular(store, file);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') {
      throw new RejectedError(
        'EGJ_OBJECT_MISSING',
        `${file}: object is missing; the bytes it names cannot be written`,
        file,
      );
    }
    throw new IoError('read', file, err);
  }
  const actual = sha256Hex(bytes);
  if (actual !== sha256) {
    throw new RejectedError(
      'EGJ_OBJECT_CORRUPT',
      `${file}: bytes hash to ${actual.slice(0, 12)}, not to their name`,
      file,
    );
  }
  return bytes;
}

function removeQuietly(store: Store, file: string): void {
  try {
    store.fs.rmSync(file, { force: true });
  } catch {
    // best effort: a leftover temp carries the prefix and the next recovery removes it
  }
}

/**
 * Put `bytes` (mode `mode`) at `path`, provided the target still holds `expected` (null = absent) just
 * before the commit. A mismatch is EGJ_STALE with `context` appended; nothing is replaced.
 */
export function commitTreeFile(
  store: Store,
  path: string,
  expected: string | null,
  bytes: Uint8Array,
  mode: number,
  context: string,
): void {
  const target = resolveRepoPath(store, path, { create: true });
  const tmp = writeTempFile(store, target.dir, bytes, mode, TREE_TMP_PREFIX);
  try {
    const now = currentFile(store, path).sha256;
    if (now !== expected) throw staleError(path, expected, now, context);
    if (expected === null) {
      try {
        store.fs.linkSync(tmp, target.abs);
      } catch (err) {
        if (errnoOf(err) === 'EEXIST') throw staleError(path, null, currentFile(store, path).sha256, context);
        throw new IoError('link', target.abs, err);
      }
      store.fs.unlinkSync(tmp);
    } else {
      try {
        store.fs.renameSync(tmp, target.abs);
      } catch (err) {
        throw new IoError('rename', target.abs, err);
      }
    }
  } catch (err) {
    removeQuietly(store, tmp);
    throw err;
  }
  fsyncDir(store, target.dir);
}

/** Delete `path`, provided it still holds `expected`. */
export function removeTreeFile(store: Store, path: string, expected: string, context: string): void {
  const target = resolveRepoPath(store, path, { create: false });
  const now = currentFile(store, path).sha256;
  if (now !== expected) throw staleError(path, expected, now, context);
  try {
    store.fs.unlinkSync(target.abs);
  } catch (err) {
    throw new IoError('unlink', target.abs, err);
  }
  fsyncDir(store, target.dir);
}

/** Remove torn ".genjob-tmp-*" files a crash left in the directories of `paths`. Returns the files removed. */
export function sweepTornTemps(store: Store, paths: readonly string[]): string[] {
  const removed: string[] = [];
  // resolveRepoPath refuses a directory chain with a symlink in it, so we never list or delete outside the tree
  const dirs = new Set(paths.map((p) => resolveRepoPath(store, p, { create: false }).dir));
  for (const dir of dirs) {
    let names: string[];
    try {
      names = store.fs.readdirSync(dir);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') continue;
      throw new IoError('readdir', dir, err);
    }
    const torn = names.filter((n) => n.startsWith(TREE_TMP_PREFIX));
    for (const name of torn) {
      store.fs.rmSync(join(dir, name), { force: true });
      removed.push(join(dir, name));
    }
    if (torn.length > 0) fsyncDir(store, dir);
  }
  return removed;
}
