// The only code that writes an extracted byte: a fresh mkdtemp directory (0700, checked with lstat to
// be a real, empty directory), parents made 0755, each file created O_EXCL|O_NOFOLLOW 0644 so nothing
// already there (a planted symlink included) is followed or overwritten, hashed while it streams.
// `sync` fsyncs files, then directories deepest first, then the root, in a few parallel batches.
import { createHash, type Hash } from 'node:crypto';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { IoError } from '../core/errors.js';
import { thisProcess } from '../store/process-identity.js';
import type { Extracted } from './safe-extract.js';
import type { EntrySink } from './tar-reader.js';

const FSYNC_CONCURRENCY = 16;

/** Every staging directory is `<parent>/.extract-<pid>-<start>-XXXXXX`. */
export const STAGING_PREFIX = '.extract-';

/** A fresh 0700 directory inside `parent`, checked to be a real, empty directory. */
export function makeStaging(parent: string): string {
  let dir: string;
  try {
    const { pid, start } = thisProcess(); // named for its writer, so sweepDeadStaging knows when it is gone
    dir = mkdtempSync(join(parent, `${STAGING_PREFIX}${pid}-${start}-`));
  } catch (err) {
    throw IoError.wrap('mkdtemp', parent, err);
  }
  let fresh: boolean;
  try {
    const st = lstatSync(dir);
    fresh = st.isDirectory() && (st.mode & 0o777) === 0o700 && readdirSync(dir).length === 0;
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw IoError.wrap('check staging directory', dir, err);
  }
  if (!fresh) {
    throw IoError.wrap('check staging directory', dir, new Error('not a fresh empty 0700 directory'));
  }
  return dir;
}

/** Writes admitted files under `dir`; at most one file is open at a time. */
export class StagingWriter {
  readonly files: Extracted['files'] = [];
  readonly #written: string[] = [];
  readonly #madeDirs = new Set<string>();
  readonly #dirsToSync: string[] = [];
  #fd = -1; // the file being written, -1 between files

  constructor(readonly dir: string) {}

  /** Create `path` (its parent `dirs` first, outermost first) and return the sink for its `size` bytes. */
  open(path: string, dirs: readonly string[], size: number): EntrySink {
    for (const dir of dirs) if (!this.#madeDirs.has(dir)) this.#mkdir(dir);
    const abs = join(this.dir, path);
    let fd: number;
    try {
      fd = openSync(
        abs,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o644,
      );
    } catch (err) {
      throw IoError.wrap('create', abs, err);
    }
    const hash: Hash = createHash('sha256');
    this.#fd = fd;
    return {
      write: (data) => {
        hash.update(data);
        let off = 0;
        try {
          while (off < data.length) off += writeSync(fd, data, off, data.length - off);
        } catch (err) {
          throw IoError.wrap('write', abs, err);
        }
      },
      end: () => {
        this.#fd = -1;
        try {
          closeSync(fd);
        } catch (err) {
          throw IoError.wrap('close', abs, err);
        }
        this.files.push({ path, sha256: hash.digest('hex'), bytes: size });
        this.#written.push(abs);
      },
    };
  }

  /** Close a file left open by a rejection. */
  close(): void {
    if (this.#fd >= 0) {
      closeSync(this.#fd);
      this.#fd = -1;
    }
  }

  /** fsync every written file, then every directory made (deepest first), then the staging root. */
  async sync(): Promise<void> {
    const syncOne = async (p: string) => {
      const fh = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW).catch((err: unknown) => {
        throw IoError.wrap('open', p, err);
      });
      try {
        await fh.sync();
      } catch (err) {
        throw IoError.wrap('fsync', p, err);
      } finally {
        await fh.close().catch(() => {}); // opened read-only, after the fsync: nothing of ours to lose
      }
    };
    for (const list of [this.#written, [...this.#dirsToSync.reverse(), this.dir]]) {
      let next = 0;
      const worker = async () => {
        while (next < list.length) await syncOne(list[next++]!);
      };
      await Promise.all(Array.from({ length: Math.min(FSYNC_CONCURRENCY, list.length) }, worker));
    }
  }

  #mkdir(dir: string): void {
    const abs = join(this.dir, dir);
    try {
      mkdirSync(abs, 0o755);
    } catch (err) {
      throw IoError.wrap('mkdir', abs, err);
    }
    this.#madeDirs.add(dir);
    this.#dirsToSync.push(abs);
  }
}
