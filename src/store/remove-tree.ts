// Remove a directory tree we made (a check's scratch copies, its private index), never following a
// link: what the checked code left in it (links to anywhere, FIFOs, deep directories) is removed as
// names. Unlike fs.rmSync({recursive}), which lstats every entry (and builds a Stats with four Dates
// for it), the kind of each entry comes from the directory listing itself, so a 1,000-file copy costs
// 1,000 unlinks and no stat: ~20 ms of CPU less per check. An entry whose kind the listing does not
// give (a filesystem without d_type) is lstat'ed. Gone already is fine, anywhere in the tree.
// Each directory is opened without following a link (O_NOFOLLOW) and then listed and emptied through
// that descriptor (/proc/self/fd/N/…), never by its path again: a directory swapped for a link to
// elsewhere between its listing and its emptying is unlinked as the link it has become, not followed.
// A failure names the entry by the path it was reached from, never by its descriptor's /proc name.
// The checked code may leave directories its owner cannot list, enter or change (`chmod 000 d`): as
// the owner, we give each directory of the tree back its owner's bits (rwx) before emptying it, through
// its descriptor (never a path that could be a link by then), so no such tree outlives its check; a
// directory that cannot even be opened to read is reached by an O_PATH descriptor for that.
import {
  chmodSync,
  closeSync,
  constants,
  type Dirent,
  fchmodSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  rmdirSync,
  unlinkSync,
} from 'node:fs';
import { errnoOf, ioErrorAt } from '../core/errors.js';
import { FD_DIR, O_PATH, OWNER_RWX } from './proc-fd.js';

// without /proc (FD_DIR undefined), directories are walked by path
const OPEN_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const OPEN_DIR_PATH = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** Gone already is fine; any other failure is EGJ_IO naming `shown` (the entry's path, not its /proc name). */
function ignoreGone(err: unknown, shown: string): void {
  if (errnoOf(err) !== 'ENOENT') throw ioErrorAt(shown, err);
}

/** Whether a listed entry is a directory, by its listed kind, else by lstat (never through a link). */
// (with /proc, a wrong answer costs only time: removeDir opens with O_DIRECTORY and unlinks what is not one)
function isDir(entry: Dirent, path: string, shown: string): boolean {
  // Stryker disable next-line ConditionalExpression: with /proc, removeDir unlinks what turns out not to be a directory
  if (entry.isDirectory()) return true;
  // Stryker disable next-line ConditionalExpression,LogicalOperator,BooleanLiteral: the same, one open more per file
  if (entry.isFile() || entry.isSymbolicLink() || entry.isFIFO() || entry.isSocket()) return false;
  // Stryker disable next-line ConditionalExpression,LogicalOperator,BooleanLiteral: the same (and no test makes device nodes)
  if (entry.isBlockDevice() || entry.isCharacterDevice()) return false;
  try {
    return lstatSync(path).isDirectory(); // DT_UNKNOWN
  } catch (err) {
    ignoreGone(err, shown);
    return false; // gone: its unlink finds it gone too
  }
}

/** Unlink `path` (shown as `shown`), gone already being fine. */
function unlinkName(path: string, shown: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    ignoreGone(err, shown);
  }
}

/** Empty the directory `here` names (a descriptor's name, or a path without /proc), shown as `shown`. */
function emptyDir(here: string, shown: string): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(here, { withFileTypes: true });
  } catch (err) {
    ignoreGone(err, shown);
    return;
  }
  for (const entry of entries) {
    const path = `${here}/${entry.name}`;
    const named = `${shown}/${entry.name}`;
    // Stryker disable next-line ConditionalExpression: with /proc, removeDir unlinks what is not a directory
    if (isDir(entry, path, named)) removeDir(path, named);
    else unlinkName(path, named);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // the failure being thrown already says what went wrong here
  }
}

/**
 * Open the directory `path` to list it, never through a link. One its owner may not read (mode 000) is
 * given back its owner's bits first, through an O_PATH descriptor of the directory itself, then opened.
 */
function openDir(path: string, shown: string): number {
  try {
    return openSync(path, OPEN_DIR);
  } catch (err) {
    if (errnoOf(err) !== 'EACCES') throw err;
  }
  let at: number;
  try {
    at = openSync(path, OPEN_DIR_PATH);
  } catch (err) {
    throw ioErrorAt(shown, err);
  }
  try {
    // chmod of the descriptor's /proc name changes the directory it holds, whatever its path is now
    chmodSync(`${FD_DIR}/${at}`, OWNER_RWX);
  } catch (err) {
    throw ioErrorAt(shown, err);
  } finally {
    closeQuietly(at);
  }
  return openSync(path, OPEN_DIR);
}

/** Give the directory open as `fd` its owner's bits when it lacks any: its entries can then be removed. */
function ownerMayEmpty(fd: number, shown: string): void {
  try {
    const { mode } = fstatSync(fd);
    if ((mode & OWNER_RWX) !== OWNER_RWX) fchmodSync(fd, (mode & 0o777) | OWNER_RWX);
  } catch (err) {
    throw ioErrorAt(shown, err);
  }
}

/** Remove the directory `path` and what is in it; when it is no longer a directory, the name alone. */
function removeDir(path: string, shown: string): void {
  // Stryker disable next-line ConditionalExpression: Linux always has /proc; the path walk is for systems without it
  if (FD_DIR === undefined) emptyDir(path, shown);
  else {
    let fd: number;
    try {
      fd = openDir(path, shown);
    } catch (err) {
      const code = errnoOf(err);
      // a link (ELOOP) or a file (ENOTDIR) now stands there: it goes as a name
      // Stryker disable next-line ConditionalExpression,StringLiteral: Linux answers ENOTDIR for a link opened O_NOFOLLOW|O_DIRECTORY; ELOOP is other systems' answer
      if (code === 'ELOOP' || code === 'ENOTDIR') unlinkName(path, shown);
      else ignoreGone(err, shown);
      return;
    }
    try {
      ownerMayEmpty(fd, shown);
      emptyDir(`${FD_DIR}/${fd}`, shown);
    } catch (err) {
      closeQuietly(fd); // the first failure is the one told
      throw err;
    }
    try {
      closeSync(fd);
    } catch (err) {
      throw ioErrorAt(shown, err); // an fd's error names no file
    }
  }
  try {
    rmdirSync(path);
  } catch (err) {
    ignoreGone(err, shown);
  }
}

/** Remove `path` and, when it is a directory (not a link to one), everything under it. */
export function removeTree(path: string): void {
  let top: ReturnType<typeof lstatSync>;
  try {
    top = lstatSync(path);
  } catch (err) {
    ignoreGone(err, path);
    return;
  }
  // Stryker disable next-line ConditionalExpression: with /proc, removeDir unlinks what is not a directory
  if (top.isDirectory()) removeDir(path, path);
  else unlinkName(path, path);
}
