// Reading and replacing repository files through store.fs, never through a symlink.
// Replace = temp file ".genjob-tmp-*" (O_CREAT|O_EXCL|O_NOFOLLOW) → write → fchmod → fsync → re-check the
// target still holds `expected` → rename (or link, for a file that must not exist yet, so a racing create
// is never clobbered) → fsync the directory. A batch writes and fsyncs the temps of all its files before it
// commits the first one, so a full disk fails with the tree untouched; a temp lives in its target's
// directory, or in the deepest existing one above it until the directories still missing are made, last.
// A crash leaves every target whole (old or new bytes) plus torn or unused temps, which sweepTornTemps()
// removes.
import { constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { asIoError, errnoOf, GenjobError, IoError, RejectedError, withNote } from '../core/errors.js';
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

/** Remove a temp of ours; false when it could not be (a leftover carries the prefix, and recovery removes it). */
function removeQuietly(store: Store, file: string): boolean {
  try {
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: any error is swallowed below, so with or without force a missing temp is ignored alike
    store.fs.rmSync(file, { force: true });
    return true;
  } catch {
    return false;
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

/** What a failed commitTreeFiles says after the error, by how far it got. */
export interface CommitWords {
  /**
   * Nothing was committed, and the temps and the directories the batch made are gone again: the tree is
   * as it was. Called once, after that clean-up (a caller may withdraw its own intent here).
   */
  untouched: (stale: boolean) => string;
  /** A file was committed (or a temp or a directory could not be removed again); `stale`: a target changed. */
  partial: (stale: boolean) => string;
}

/** A target found changed right before its commit: made an EGJ_STALE once the batch knows what to say. */
class StaleTarget {
  constructor(
    readonly path: string,
    readonly expected: string | null,
    readonly found: string | null,
  ) {}
}

interface Staged {
  commit: TreeCommit;
  /** The target and its directory. */
  abs: string;
  dir: string;
  /** The fsynced temp holding its bytes until it is committed. */
  tmp?: string;
}

/**
 * commitTreeFile for many files, all or nothing up to the first commit:
 *   1. a fsynced temp for every file, in the target's directory or, when that directory does not exist
 *      yet, in the deepest one of its chain that does: a full disk fails here, before the tree changes;
 *   2. the missing directories made, as late as can be, and each parent they were made in fsynced;
 *   3. per file, the files to create first: `beforeCommit(path)`, the target re-checked, the temp linked
 *      (a file that must not exist yet: a racing create is never clobbered) or renamed over it;
 *   4. one fsync of each directory a commit changed.
 * A failure before the first commit removes the temps and the directories made (rmdir: only while empty),
 * then appends `words.untouched()`. One after it appends `words.partial()`: the files committed stay, the
 * temps not yet committed are removed. A target found changed is EGJ_STALE.
 */
export function commitTreeFiles(
  store: Store,
  commits: readonly TreeCommit[],
  words: CommitWords,
  beforeCommit: (path: string) => void = () => {},
): void {
  const staged: Staged[] = [];
  const made: string[] = [];
  const changed = new Set<string>();
  let committed = 0;
  try {
    for (const commit of commits) {
      const target = resolveRepoPath(store, commit.path, { create: false });
      const s: Staged = { commit, abs: target.abs, dir: target.dir };
      staged.push(s);
      s.tmp = writeTempFile(store, target.existing, commit.bytes(), commit.mode, TREE_TMP_PREFIX);
    }
    const parents = new Set<string>();
    for (const s of staged)
      if (dirname(s.tmp!) !== s.dir)
        resolveRepoPath(store, s.commit.path, { create: true, parentsToSync: parents, made });
    // a directory made here is durable in its parent before any file in it is committed
    for (const parent of parents) fsyncDir(store, parent);
    // the creates first: a link can still need room (tmpfs counts each link against its inodes), while a
    // rename over an existing file needs none, so a full disk stops the batch before its first commit
    const order = [
      ...staged.filter((s) => s.commit.expected === null),
      ...staged.filter((s) => s.commit.expected !== null),
    ];
    for (const s of order) {
      const { commit: c, abs } = s;
      const tmp = s.tmp!;
      beforeCommit(c.path);
      const now = currentFile(store, c.path).sha256;
      if (now !== c.expected) throw new StaleTarget(c.path, c.expected, now);
      if (c.expected === null) {
        try {
          store.fs.linkSync(tmp, abs);
        } catch (err) {
          if (errnoOf(err) === 'EEXIST')
            throw new StaleTarget(c.path, null, currentFile(store, c.path).sha256);
          throw IoError.wrap('link', abs, err);
        }
        committed += 1;
        s.tmp = undefined;
        changed.add(s.dir);
        changed.add(dirname(tmp));
        store.fs.unlinkSync(tmp);
      } else {
        try {
          store.fs.renameSync(tmp, abs);
        } catch (err) {
          throw IoError.wrap('rename', abs, err);
        }
        committed += 1;
        s.tmp = undefined;
        changed.add(s.dir);
      }
    }
    for (const dir of changed) fsyncDir(store, dir);
  } catch (err) {
    throw failed(store, err, { staged, made, changed, committed, words });
  }
}

/** The clean-up after a failed batch, and the error to throw: `err` with what became of the tree appended. */
function failed(
  store: Store,
  err: unknown,
  b: { staged: Staged[]; made: string[]; changed: Set<string>; committed: number; words: CommitWords },
): unknown {
  let clean = true;
  for (const s of b.staged) if (s.tmp !== undefined && !removeQuietly(store, s.tmp)) clean = false;
  if (b.committed === 0) clean = removeMadeDirs(store, b.made) && clean;
  else
    for (const dir of b.changed) {
      try {
        fsyncDir(store, dir); // best effort: the files committed so far made durable
      } catch {
        // the failure already being reported is the one to say
      }
    }
  const stale = err instanceof StaleTarget;
  // not an error of ours (a bug, a simulated crash): thrown as it is, and no caller's intent is withdrawn
  if (!stale && !(asIoError(err) instanceof GenjobError)) return err;
  const note = b.committed === 0 && clean ? b.words.untouched(stale) : b.words.partial(stale);
  return err instanceof StaleTarget
    ? staleError(err.path, err.expected, err.found, note)
    : withNote(err, note);
}

/** rmdir the directories a failed batch made, deepest first; false when one could not be removed. */
function removeMadeDirs(store: Store, made: readonly string[]): boolean {
  let clean = true;
  for (const dir of [...made].reverse()) {
    try {
      store.fs.rmdirSync(dir);
      fsyncDir(store, dirname(dir));
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') clean = false;
    }
  }
  return clean;
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

/**
 * rmdir each directory of `dirs` (contract paths) that is still there and empty, deepest first, and fsync
 * its parent. Never recursive: one that holds anything, or that is a symlink now, stays. Returns the ones
 * removed.
 */
export function removeEmptyDirs(store: Store, dirs: readonly string[]): string[] {
  const removed: string[] = [];
  const depth = (p: string) => p.split('/').length;
  const deepestFirst = [...dirs].sort((a, b) => depth(b) - depth(a) || (a < b ? 1 : -1));
  for (const rel of deepestFirst) {
    const abs = join(store.root, ...rel.split('/'));
    try {
      // a real directory at the end of a chain of real directories, or not ours to remove
      if (resolveRepoPath(store, `${rel}/x`, { create: false }).existing !== abs) continue;
    } catch (err) {
      if (err instanceof UnsafeRepoPathError) continue;
      throw err;
    }
    try {
      store.fs.rmdirSync(abs);
    } catch (err) {
      const errno = errnoOf(err);
      if (errno === 'ENOTEMPTY' || errno === 'EEXIST' || errno === 'ENOENT') continue;
      throw IoError.wrap('rmdir', abs, err);
    }
    fsyncDir(store, dirname(abs));
    removed.push(rel);
  }
  return removed;
}

/**
 * Remove torn ".genjob-tmp-*" files a crash left next to `paths`: in their directories and in each
 * directory above them (a file whose directory was still to be made had its temp in the deepest one that
 * existed). Returns the files removed.
 */
export function sweepTornTemps(store: Store, paths: readonly string[]): string[] {
  const removed: string[] = [];
  // resolveRepoPath refuses a directory chain with a symlink in it, so we never list or delete outside the tree
  const dirs = new Set<string>();
  for (const p of paths) {
    for (let d = resolveRepoPath(store, p, { create: false }).existing; !dirs.has(d); d = dirname(d)) {
      dirs.add(d);
      if (d === store.root) break;
    }
  }
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
