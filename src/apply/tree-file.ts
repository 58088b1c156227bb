// Reading and replacing repository files through store.fs, never through a symlink.
// Replace = temp file ".genjob-tmp-*" in the target's directory (O_CREAT|O_EXCL|O_NOFOLLOW) → write →
// fchmod → fsync → re-check the target still holds `expected` → rename (or link, for a file that must
// not exist yet, so a racing create is never clobbered) → fsync the directory. A batch does each step for
// all the files of one directory, then fsyncs it once. A crash leaves every target whole (old or new bytes)
// plus torn or unused temps, which sweepTornTemps() removes.
import { constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { errnoOf, IoError, RejectedError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { fsyncDir, readdirOrEmpty, writeTempFile } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { type CurrentFile, staleError } from './apply-plan.js';
import { resolveRepoPath, UnsafeRepoPathError } from './repo-path.js';

/** Every temp file genjob puts next to a repository file starts with this; recovery deletes them. */
export const TREE_TMP_PREFIX = '.genjob-tmp-';

/** Read a whole regular file without following a symlink at its last component. Throws raw errno errors. */
export function readRegular(store: Store, abs: string): Buffer {
  const { fs } = store;
  const fd = fs.openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw Object.assign(new Error(`${abs}: not a regular file`), { code: 'EFTYPE' });
    // sized by fstat (+1 so the read that fills it also shows EOF); grown only if the file grows meanwhile
    let buf = Buffer.allocUnsafe(st.size + 1);
    let len = 0;
    for (;;) {
      if (len === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, len);
        buf = bigger;
      }
      const n = fs.readSync(fd, buf, len, buf.length - len, null);
      if (n === 0) break;
      len += n;
    }
    return buf.subarray(0, len);
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
    throw IoError.wrap('read', target.abs, err);
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
    throw IoError.wrap('read', file, err);
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
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: any error is swallowed below, so with or without force a missing temp is ignored alike
    store.fs.rmSync(file, { force: true });
  } catch {
    // best effort: a leftover temp carries the prefix and the next recovery removes it
  }
}

/** One file for commitTreeFiles: `bytes()` (mode `mode`) goes to `path` if it still holds `expected` (null = absent). */
export interface TreeCommit {
  path: string;
  expected: string | null;
  mode: number;
  /** Called once, when its temp file is written, so a batch holds one file's bytes at a time. */
  bytes: () => Uint8Array;
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
  commitTreeFiles(store, [{ path, expected, mode, bytes: () => bytes }], context);
}

/**
 * commitTreeFile for many files, one directory fsync per directory: per directory, a fsynced temp for each
 * file, then each target re-checked and the temp renamed (or linked) over it, then one fsync of the directory
 * (and of each parent a new directory was made in). `beforeCommit(path)` runs before each re-check. A stale
 * target throws EGJ_STALE with `context`; the files already committed are made durable first, and the
 * temps not yet committed are removed.
 */
export function commitTreeFiles(
  store: Store,
  commits: readonly TreeCommit[],
  context: string,
  beforeCommit: (path: string) => void = () => {},
): void {
  const byDir = new Map<string, TreeCommit[]>();
  for (const c of commits) {
    const dir = dirname(join(store.root, ...c.path.split('/')));
    const group = byDir.get(dir) ?? [];
    if (group.length === 0) byDir.set(dir, group);
    group.push(c);
  }
  for (const group of byDir.values()) commitDirectory(store, group, context, beforeCommit);
}

function commitDirectory(
  store: Store,
  group: readonly TreeCommit[],
  context: string,
  beforeCommit: (path: string) => void,
): void {
  const parentsToSync = new Set<string>();
  const targets = group.map((c) => resolveRepoPath(store, c.path, { create: true, parentsToSync }));
  // a directory made here is durable in its parent before any file in it is committed
  for (const parent of parentsToSync) fsyncDir(store, parent);
  const dir = targets[0]!.dir;
  const temps: Array<string | undefined> = [];
  let committed = 0;
  try {
    for (const c of group) temps.push(writeTempFile(store, dir, c.bytes(), c.mode, TREE_TMP_PREFIX));
    group.forEach((c, i) => {
      const tmp = temps[i]!;
      const abs = targets[i]!.abs;
      beforeCommit(c.path);
      const now = currentFile(store, c.path).sha256;
      if (now !== c.expected) throw staleError(c.path, c.expected, now, context);
      if (c.expected === null) {
        try {
          store.fs.linkSync(tmp, abs);
        } catch (err) {
          if (errnoOf(err) === 'EEXIST')
            throw staleError(c.path, null, currentFile(store, c.path).sha256, context);
          throw IoError.wrap('link', abs, err);
        }
        committed += 1;
        store.fs.unlinkSync(tmp);
      } else {
        try {
          store.fs.renameSync(tmp, abs);
        } catch (err) {
          throw IoError.wrap('rename', abs, err);
        }
        committed += 1;
      }
      temps[i] = undefined;
    });
  } finally {
    for (const tmp of temps) if (tmp !== undefined) removeQuietly(store, tmp);
    if (committed > 0) fsyncDir(store, dir);
  }
}

/** Delete `path`, provided it still holds `expected`. */
export function removeTreeFile(store: Store, path: string, expected: string, context: string): void {
  const target = resolveRepoPath(store, path, { create: false });
  const now = currentFile(store, path).sha256;
  if (now !== expected) throw staleError(path, expected, now, context);
  try {
    store.fs.unlinkSync(target.abs);
  } catch (err) {
    throw IoError.wrap('unlink', target.abs, err);
  }
  fsyncDir(store, target.dir);
}

/** Remove torn ".genjob-tmp-*" files a crash left in the directories of `paths`. Returns the files removed. */
export function sweepTornTemps(store: Store, paths: readonly string[]): string[] {
  const removed: string[] = [];
  // resolveRepoPath refuses a directory chain with a symlink in it, so we never list or delete outside the tree
  const dirs = new Set(paths.map((p) => resolveRepoPath(store, p, { create: false }).dir));
  for (const dir of dirs) {
    const torn = readdirOrEmpty(store, dir).filter((n) => n.startsWith(TREE_TMP_PREFIX));
    for (const name of torn) {
      store.fs.rmSync(join(dir, name), { force: true });
      removed.push(join(dir, name));
    }
    if (torn.length > 0) fsyncDir(store, dir);
  }
  return removed;
}
