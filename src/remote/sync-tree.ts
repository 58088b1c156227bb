// Make a directory tree built on the host durable before it is renamed into the cache: every file and
// every directory in it fsynced, deepest first. An entry renamed into results/ is what lets serve clear
// a generation's started record; a crash must then find the entry whole, not a name over empty files
// (which would be set aside as tampered, and the paid-for generation with it).
import { constants, type Dirent, fsyncSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { IoError } from '../core/errors.js';
import { fsyncDir } from '../store/durable.js';
import { nodeFs } from '../store/fs-port.js';

const host = { fs: nodeFs };

function fsyncFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    throw IoError.wrap('open', path, err);
  }
  try {
    fsyncSync(fd);
  } catch (err) {
    throw IoError.wrap('fsync', path, err);
  } finally {
    nodeFs.closeSync(fd);
  }
}

/** fsync every regular file and directory under `dir`, then `dir` itself (links are not followed). */
export function syncTree(dir: string): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    throw IoError.wrap('read directory', dir, err);
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) syncTree(path);
    else if (entry.isFile()) fsyncFile(path);
  }
  syncDirectory(dir);
}

/** fsync one directory: a name created, renamed or removed in it is then on disk. */
export function syncDirectory(dir: string): void {
  fsyncDir(host, dir);
}
