// Whether a path exists, telling "not there" from "cannot look". fs.existsSync answers false for every
// error, so a disk error or a denied permission on .git would read as "no repository here" and a
// command would go on as if a file were missing.
import { statSync } from 'node:fs';
import { errnoName } from './errno.js';
import { IoError } from './errors.js';

/** True when `path` exists (following symlinks); false when it or a parent is absent; EGJ_IO otherwise. */
export function pathExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (err) {
    const errno = errnoName(err);
    if (errno === 'ENOENT' || errno === 'ENOTDIR') return false;
    throw IoError.wrap('stat', path, err);
  }
}
