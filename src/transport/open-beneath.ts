// Open a contract path under a root without following a symlink in ANY component: each directory is
// opened with O_DIRECTORY|O_NOFOLLOW relative to the descriptor of its parent (Linux: through
// /proc/self/fd/N/<name>, which resolves N itself, not a name someone may have swapped since), and the
// file with O_NOFOLLOW|O_NONBLOCK. So a parent directory replaced by a symlink after mint is refused,
// not followed. Without /proc, each directory is lstat-checked and its dev/ino compared after opening.
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync } from 'node:fs';
import { errnoOf, IoError } from '../core/errors.js';
import { InputChangedError, InputNotRegularError } from './archive-errors.js';

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const HAVE_PROC_FD = existsSync('/proc/self/fd');

/**
 * An open regular file: its descriptor (the caller closes it), its size when opened, and the path it
 * was opened as (the root joined to the contract path), which a failed read names.
 */
export interface OpenedFile {
  fd: number;
  size: number;
  path: string;
}

/**
 * A regular file `rel` ('/'-separated contract path) under `root`, opened without following links.
 * Synchronous: each step is one open of a name in a directory already open, no slower than the
 * thread-pool hop an async open costs, and a bundle of many small files opens thousands of them.
 */
export function openBeneath(root: string, rel: string): OpenedFile {
  const opener = new BeneathOpener(root);
  try {
    return opener.open(rel);
  } finally {
    opener.close();
  }
}

/**
 * openBeneath for many files in turn: the directory of the last file stays open, so the next file in
 * the same directory (inputs come sorted) is one open and one fstat, not a walk from the root. A
 * directory held open is the one reached without a link when it was opened: a name swapped for a
 * symlink since is not followed (the digest check then decides). close() when done.
 */
export class BeneathOpener {
  #dir: string | undefined; // the contract path of the directory held open ('' for the root)
  #dirFd = -1;
  #dirPath = '';

  constructor(readonly root: string) {}

  open(rel: string): OpenedFile {
    const cut = rel.lastIndexOf('/');
    const dir = cut < 0 ? '' : rel.slice(0, cut);
    const base = rel.slice(cut + 1);
    if (dir !== this.#dir) {
      this.close();
      this.#dirFd = walkTo(this.root, rel, dir);
      this.#dir = dir;
      this.#dirPath = dir === '' ? this.root : `${this.root}/${dir}`;
    }
    return openFileIn(this.#dirFd, this.#dirPath, rel, base);
  }

  /** Close the directory held open; a failure is EGJ_IO naming it. */
  close(): void {
    const fd = this.#dirFd;
    this.#dirFd = -1;
    this.#dir = undefined;
    if (fd >= 0) closeDir(fd, this.#dirPath);
  }
}

/** The directory `dir` of `rel` under `root`, each component opened without following a link. */
function walkTo(root: string, rel: string, dir: string): number {
  let dirFd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
  let dirPath = root;
  try {
    for (const part of dir === '' ? [] : dir.split('/')) {
      const next = `${dirPath}/${part}`;
      let fd: number;
      try {
        fd = openDirAt(dirFd, dirPath, part);
      } catch (err) {
        if (err instanceof InputChangedError) throw err;
        const code = errnoOf(err);
        if (code === 'ELOOP' || code === 'ENOTDIR')
          throw new InputChangedError(rel, `${part} (on the way to it) is now a symlink or not a directory`);
        if (code === 'ENOENT') throw new InputChangedError(rel, `${part} (on the way to it) is gone`);
        throw new IoError('open', next, err);
      }
      const parent = dirFd;
      const parentPath = dirPath;
      dirFd = fd;
      dirPath = next;
      closeDir(parent, parentPath);
    }
    const held = dirFd;
    dirFd = -1;
    return held;
  } finally {
    if (dirFd >= 0) closeQuietly(dirFd);
  }
}

/** The regular file `base` in the directory open as `dirFd`, opened O_NOFOLLOW, with its size. */
function openFileIn(dirFd: number, dirPath: string, rel: string, base: string): OpenedFile {
  let fd: number;
  try {
    fd = openSync(pathAt(dirFd, dirPath, base), FILE_FLAGS);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ELOOP') throw new InputNotRegularError(rel, 'a symbolic link', { cause: err });
    if (code === 'ENOENT') throw new InputChangedError(rel, 'is gone');
    throw new IoError('open', `${dirPath}/${base}`, err);
  }
  return regularOpened(fd, rel, `${dirPath}/${base}`);
}

/** `fd` with its size if it is a regular file; else it is closed and InputNotRegularError (`rel`) thrown. */
export function regularOpened(fd: number, rel: string, path: string): OpenedFile {
  try {
    const st = fstatSync(fd);
    if (!st.isFile())
      throw new InputNotRegularError(rel, st.isDirectory() ? 'a directory' : 'not a regular file');
    return { fd, size: st.size, path };
  } catch (err) {
    closeQuietly(fd);
    throw err instanceof InputNotRegularError ? err : new IoError('fstat', path, err);
  }
}

/**
 * The name `name` in the directory open as `dirFd` (known as `dirPath`): through /proc/self/fd, which
 * resolves the descriptor itself, not a name someone may have swapped since; without /proc, by path.
 */
export function pathAt(dirFd: number, dirPath: string, name: string): string {
  return HAVE_PROC_FD ? `/proc/self/fd/${dirFd}/${name}` : `${dirPath}/${name}`;
}

/** Open the directory `name` in `dirFd` without following a symlink (ELOOP or ENOTDIR when it is none). */
export function openDirAt(dirFd: number, dirPath: string, name: string): number {
  return HAVE_PROC_FD ? openSync(pathAt(dirFd, dirPath, name), DIR_FLAGS) : openChecked(`${dirPath}/${name}`);
}

/** Close a read-only directory descriptor; a failure is EGJ_IO naming the directory. */
function closeDir(fd: number, path: string): void {
  try {
    closeSync(fd);
  } catch (err) {
    throw new IoError('close', path, err);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // an error is already on its way out; the descriptor is freed either way
  }
}

/** Without /proc: open a directory by name, then check it is the very directory lstat saw (no swap). */
function openChecked(path: string): number {
  const before = lstatSync(path);
  if (!before.isDirectory()) throw Object.assign(new Error(`${path}: not a directory`), { code: 'ENOTDIR' });
  const fd = openSync(path, DIR_FLAGS);
  const after = fstatSync(fd);
  if (after.dev !== before.dev || after.ino !== before.ino) {
    closeSync(fd);
    throw Object.assign(new Error(`${path}: changed while opened`), { code: 'ELOOP' });
  }
  return fd;
}
