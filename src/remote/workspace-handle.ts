// The workspace as serve holds it across a generator run. serve opens it before the generator starts
// and afterwards reaches what lies beneath only through descriptors: each directory opened with
// O_NOFOLLOW relative to its parent's descriptor, each file lstat'ed there and opened O_NOFOLLOW |
// O_NONBLOCK (a FIFO cannot block serve), its inode compared. The workspace's name must still be the
// very directory it opened (dev/ino), else the run is refused. So a workspace, or a directory in it,
// swapped for a link is never followed: serve never reads, moves or deletes a host file for a generator.
import {
  type BigIntStats,
  closeSync,
  constants,
  createWriteStream,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
} from 'node:fs';
import { type FileHandle, open, rename } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { errnoOf, IoError, ioErrorAt } from '../core/errors.js';
import { openDirAt, pathAt } from '../transport/open-beneath.js';

const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** A generator changed what serve holds beneath the workspace: the run is rejected with this reason. */
export class WorkspaceSwapError extends Error {}

function changed(path: string): WorkspaceSwapError {
  return new WorkspaceSwapError(
    `${path} changed under serve (swapped for a link or another file) after the generator ran; nothing was read through it`,
  );
}

/** A directory held open: `fd` is what counts, `path` only names it in messages. */
export class HeldDir {
  constructor(
    readonly fd: number,
    readonly path: string,
  ) {}

  /** A name in this directory, reached through the descriptor. */
  at(name: string): string {
    return pathAt(this.fd, this.path, name);
  }

  /** lstat of `name` in this directory (never followed); gone is a WorkspaceSwapError. */
  lstat(name: string): BigIntStats {
    let st: BigIntStats | undefined;
    try {
      st = lstatSync(this.at(name), { bigint: true, throwIfNoEntry: false });
    } catch (err) {
      throw ioErrorAt(`${this.path}/${name}`, err); // named as the user knows it, not as /proc/self/fd/N
    }
    if (st === undefined) throw changed(`${this.path}/${name}`);
    return st;
  }

  entries() {
    try {
      return readdirSync(this.at('.'), { withFileTypes: true });
    } catch (err) {
      throw ioErrorAt(this.path, err);
    }
  }

  /** The subdirectory `name`, opened without following a link; one swapped in is a WorkspaceSwapError. */
  dir(name: string): HeldDir {
    try {
      return new HeldDir(openDirAt(this.fd, this.path, name), `${this.path}/${name}`);
    } catch (err) {
      if (['ELOOP', 'ENOTDIR', 'ENOENT'].includes(errnoOf(err) ?? '')) throw changed(`${this.path}/${name}`);
      throw ioErrorAt(`${this.path}/${name}`, err);
    }
  }

  /** The regular file `name` (lstat'ed as `ino`), opened without following a link or blocking on a FIFO. */
  async file(name: string, ino?: bigint): Promise<FileHandle> {
    let fh: FileHandle;
    try {
      fh = await open(this.at(name), FILE_FLAGS);
    } catch (err) {
      if (['ELOOP', 'ENOENT', 'ENXIO'].includes(errnoOf(err) ?? '')) throw changed(`${this.path}/${name}`);
      throw ioErrorAt(`${this.path}/${name}`, err);
    }
    const st = await fh.stat({ bigint: true }).catch(async (err: unknown) => {
      await fh.close();
      throw ioErrorAt(`${this.path}/${name}`, err);
    });
    if (!st.isFile() || (ino !== undefined && st.ino !== ino)) {
      await fh.close();
      throw changed(`${this.path}/${name}`);
    }
    return fh;
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // a read-only directory descriptor: nothing was written through it
    }
  }
}

/** The workspace, opened before the generator runs. */
export class HeldWorkspace extends HeldDir {
  private constructor(
    fd: number,
    path: string,
    private readonly dev: bigint,
    private readonly ino: bigint,
  ) {
    super(fd, path);
  }

  static open(path: string): HeldWorkspace {
    const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const st = fstatSync(fd, { bigint: true });
    return new HeldWorkspace(fd, path, st.dev, st.ino);
  }

  /** Why the workspace's name no longer names the directory serve opened, or null. */
  swapped(): string | null {
    const st = lstatSync(this.path, { bigint: true, throwIfNoEntry: false });
    if (st?.isDirectory() && st.dev === this.dev && st.ino === this.ino) return null;
    const now = st === undefined ? 'gone' : st.isSymbolicLink() ? 'a symlink' : 'another file';
    return `the generator replaced its workspace ${this.path} (it is now ${now}); nothing was read through it`;
  }

  /** The directory holding `rel` ('/'-separated), each step opened without following a link. */
  parentOf(rel: string): { dir: HeldDir; base: string; close: () => void } {
    const parts = rel.split('/');
    const base = parts.pop()!;
    const opened: HeldDir[] = [];
    let dir: HeldDir = this;
    try {
      for (const p of parts) {
        dir = dir.dir(p);
        opened.push(dir);
      }
    } catch (err) {
      for (const d of opened) d.close();
      throw err;
    }
    return {
      dir,
      base,
      close: () => {
        for (const d of opened) d.close();
      },
    };
  }

  /**
   * Move the file `rel` out to `to`: a rename beneath the held descriptors (its last step is never
   * followed), a copy across filesystems; whatever arrives must be a regular file.
   */
  async moveOut(rel: string, to: string): Promise<void> {
    const { dir, base, close } = this.parentOf(rel);
    try {
      try {
        await rename(dir.at(base), to);
      } catch (err) {
        if (errnoOf(err) !== 'EXDEV') throw IoError.wrap('rename', `${this.path}/${rel} → ${to}`, err);
        const fh = await dir.file(base);
        await pipeline(fh.createReadStream(), createWriteStream(to, { flags: 'wx', mode: 0o600 }));
      }
    } finally {
      close();
    }
    if (!lstatSync(to).isFile()) throw changed(`${this.path}/${rel}`);
  }
}
