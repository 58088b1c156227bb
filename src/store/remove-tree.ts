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
import {
  closeSync,
  constants,
  type Dirent,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  rmdirSync,
  unlinkSync,
} from 'node:fs';
import { errnoOf, ioErrorAt } from '../core/errors.js';

/** Where a directory's descriptor can be named; without /proc, directories are walked by path. */
const FD_DIR = existsSync('/proc/self/fd') ? '/proc/self/fd' : undefined;
const OPEN_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

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

/** Remove the directory `path` and what is in it; when it is no longer a directory, the name alone. */
function removeDir(path: string, shown: string): void {
  // Stryker disable next-line ConditionalExpression: Linux always has /proc; the path walk is for systems without it
  if (FD_DIR === undefined) emptyDir(path, shown);
  else {
    let fd: number;
    try {
      fd = openSync(path, OPEN_DIR);
    } catch (err) {
      const code = errnoOf(err);
      // a link (ELOOP) or a file (ENOTDIR) now stands there: it goes as a name
      // Stryker disable next-line ConditionalExpression,StringLiteral: Linux answers ENOTDIR for a link opened O_NOFOLLOW|O_DIRECTORY; ELOOP is other systems' answer
      if (code === 'ELOOP' || code === 'ENOTDIR') unlinkName(path, shown);
      else ignoreGone(err, shown);
      return;
    }
    try {
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
