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
  chownSync,
  closeSync,
  constants,
  fstatSync,
  lchownSync,
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
/** Who a handed-back entry belongs to: genjob's own user. */
const OWN_UID = process.getuid?.() ?? 0;
const OWN_GID = process.getgid?.() ?? 0;

/** Make `path` plain (see the header), and, handed back, genjob's own; true when it is a directory to walk. */
function plainEntry(path: string, handBack: boolean): boolean {
  const fd = FD_DIR === undefined ? undefined : openSync(path, O_PATH | constants.O_NOFOLLOW);
  try {
    const { mode } = fd === undefined ? lstatSync(path) : fstatSync(fd);
    const type = mode & S_IFMT;
    if (type === S_IFLNK) {
      if (handBack) lchownSync(path, OWN_UID, OWN_GID); // a link is never followed, its own owner changed
      return false; // a link's own mode means nothing, and it is never followed
    }
    const plain = type === S_IFDIR ? (mode & 0o777) | OWNER_RWX : type === S_IFREG ? mode & 0o777 : null;
    if (plain === null) {
      unlinkSync(path); // a FIFO, a socket, a device: a name, removed as one
      return false;
    }
    // handed back: others may read (and search, run) what its owner may, as the sandbox user then must
    const want = handBack ? plain | ((plain & 0o500) >> 6) : plain;
    // chown and chmod of the descriptor's /proc name change what it holds, whatever the path names now
    const at = fd === undefined ? path : `${FD_DIR}/${fd}`;
    if (handBack) chownSync(at, OWN_UID, OWN_GID); // before the chmod: a chown may clear mode bits
    if (handBack || want !== (mode & 0o7777)) chmodSync(at, want);
    return type === S_IFDIR;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Make the tree under `dir` (and `dir` itself) plain: no setuid/setgid/sticky bit, no special file.
 * `handBack`: made by a sandbox user, every name becomes genjob's user's, readable by others as by its owner.
 */
export function plainTree(dir: string, handBack = false): void {
  const walk = (path: string) => {
    let isDir: boolean;
    try {
      isDir = plainEntry(path, handBack);
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
