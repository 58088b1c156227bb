// What a setup made is kept on the host (.gen/check-setup/), inside a repository other users may reach,
// and the code that made it is untrusted (a branch's or a model's): it must carry nothing that acts as
// more than the bytes it holds. Before an entry is sealed, every file and directory loses its setuid,
// setgid and sticky bits (a `chmod 4755` copy of a shell made by root's setup was a root shell for any
// local user), every directory gets its owner's bits back (so it can be read whole and removed), and
// whatever is neither a file, a directory nor a link (a FIFO, a socket, a device node under
// --no-sandbox) is removed. Inside the sandbox such bits never take effect (bubblewrap mounts every
// bind nosuid and sets no_new_privs); this is for the host. Each name is opened without following a
// link (O_PATH|O_NOFOLLOW) and changed through that descriptor: a link is left as it is, never followed.
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { ioErrorAt } from '../core/errors.js';
import { FD_DIR, O_PATH, OWNER_RWX } from '../store/proc-fd.js';

// without /proc (FD_DIR undefined), a name is lstat'ed and changed by its path
const { S_IFMT, S_IFDIR, S_IFREG, S_IFLNK } = constants;

/** Make `path` plain (see the header); true when it is a directory to walk. */
function plainEntry(path: string): boolean {
  const fd = FD_DIR === undefined ? undefined : openSync(path, O_PATH | constants.O_NOFOLLOW);
  try {
    const { mode } = fd === undefined ? lstatSync(path) : fstatSync(fd);
    const type = mode & S_IFMT;
    if (type === S_IFLNK) return false; // a link's own mode means nothing, and it is never followed
    const want = type === S_IFDIR ? (mode & 0o777) | OWNER_RWX : type === S_IFREG ? mode & 0o777 : null;
    if (want === null) {
      unlinkSync(path); // a FIFO, a socket, a device: a name, removed as one
      return false;
    }
    // chmod of the descriptor's /proc name changes what it holds, whatever the path names now
    if (want !== (mode & 0o7777)) chmodSync(fd === undefined ? path : `${FD_DIR}/${fd}`, want);
    return type === S_IFDIR;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Make the tree under `dir` (and `dir` itself) plain: no setuid/setgid/sticky bit, no special file. */
export function plainTree(dir: string): void {
  const walk = (path: string) => {
    let isDir: boolean;
    try {
      isDir = plainEntry(path);
    } catch (err) {
      throw ioErrorAt(path, err);
    }
    if (!isDir) return;
    let names: string[];
    try {
      names = readdirSync(path);
    } catch (err) {
      throw ioErrorAt(path, err);
    }
    for (const name of names) walk(join(path, name));
  };
  walk(dir);
}
