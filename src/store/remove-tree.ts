// Remove a directory tree we made (a check's scratch copies, its private index), never following a
// link: what the checked code left in it (links to anywhere, FIFOs, deep directories) is removed as
// names. Unlike fs.rmSync({recursive}), which lstats every entry (and builds a Stats with four Dates
// for it), the kind of each entry comes from the directory listing itself, so a 1,000-file copy costs
// 1,000 unlinks and no stat: ~20 ms of CPU less per check. An entry whose kind the listing does not
// give (a filesystem without d_type) is lstat'ed. Gone already is fine, anywhere in the tree.
import { type Dirent, lstatSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { errnoOf } from '../core/errors.js';

function ignoreGone(err: unknown): void {
  if (errnoOf(err) !== 'ENOENT') throw err;
}

/** Whether a listed entry is a directory, by its listed kind, else by lstat (never through a link). */
function isDir(entry: Dirent, path: string): boolean {
  if (entry.isDirectory()) return true;
  if (entry.isFile() || entry.isSymbolicLink() || entry.isFIFO() || entry.isSocket()) return false;
  if (entry.isBlockDevice() || entry.isCharacterDevice()) return false;
  return lstatSync(path).isDirectory(); // DT_UNKNOWN
}

function removeDir(dir: string): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    ignoreGone(err);
    return;
  }
  for (const entry of entries) {
    const path = `${dir}/${entry.name}`;
    try {
      if (isDir(entry, path)) removeDir(path);
      else unlinkSync(path);
    } catch (err) {
      ignoreGone(err);
    }
  }
  try {
    rmdirSync(dir);
  } catch (err) {
    ignoreGone(err);
  }
}

/** Remove `path` and, when it is a directory (not a link to one), everything under it. */
export function removeTree(path: string): void {
  let top: ReturnType<typeof lstatSync>;
  try {
    top = lstatSync(path);
  } catch (err) {
    ignoreGone(err);
    return;
  }
  if (top.isDirectory()) removeDir(path);
  else {
    try {
      unlinkSync(path);
    } catch (err) {
      ignoreGone(err);
    }
  }
}
