// The durable-write recipes every state transition is built from:
//   publish: tmp (O_EXCL) → write → fsync → link(tmp, final) → unlink(tmp) → fsync(dir)   never clobbers
//            (a batch: every tmp written and fsynced, then every link + unlink, then each dir fsynced once)
//   replace: tmp in the target's dir → write → fsync → rename over target → fsync(dir)
//   publish with an alias: publish, but the temp is renamed over the alias instead of unlinked (one inode,
//            two names; the alias replaced as by replace, without a second temp to write and fsync)
//   move:    rename(a, b) → fsync both directories
//   advisory replace: the replace without its fsyncs, only for a record a crash may lose (see replaceAdvisory)
// An fsync error is fatal and never retried (fsyncgate): it surfaces as an IoError.
import { constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { errnoOf, IoError, RecordUnreadableError, UsageError } from '../core/errors.js';
import { ownerGone, pidAlive, thisProcess } from './process-identity.js';
import { MAX_RECORD_BYTES, readRecordFile } from './read-record.js';
import type { Store } from './store.js';

/** What the recipes need of a Store: its filesystem. Code outside .gen/ (trust file, key files) passes { fs }. */
export type HasFs = Pick<Store, 'fs'>;

let tmpCounter = 0;

/** `<prefix><pid>-<start>-<n>-<random>`: pid and start time name the writer, so a sweeper knows when it is gone. */
function tmpName(dir: string, prefix: string): string {
  tmpCounter += 1;
  const { pid, start } = thisProcess();
  return join(dir, `${prefix}${pid}-${start}-${tmpCounter}-${Math.random().toString(36).slice(2, 10)}`);
}

export function fsyncDir(store: HasFs, dir: string): void {
  const { fs } = store;
  const fd = fs.openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fs.fsyncSync(fd);
  } catch (err) {
    throw IoError.wrap('fsync of directory', dir, err);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Create `path`, which must not exist (EEXIST is thrown as is), holding `bytes`: O_EXCL|O_NOFOLLOW,
 * the exact `mode` (fchmod, so the umask cannot widen or narrow it), fsynced. Removed again on failure.
 */
export function createExclusive(
  store: HasFs,
  path: string,
  bytes: Uint8Array,
  mode = 0o644,
  sync = true,
): void {
  const { fs } = store;
  const fd = fs.openSync(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  let closing = false;
  try {
    let off = 0;
    while (off < bytes.length) off += fs.writeSync(fd, bytes, off, bytes.length - off);
    fs.fchmodSync(fd, mode);
    try {
      if (sync) fs.fsyncSync(fd);
    } catch (err) {
      throw IoError.wrap('fsync', path, err);
    }
    closing = true;
    fs.closeSync(fd);
  } catch (err) {
    // a failed close still frees the fd (Linux), and the file it leaves is not one we can vouch for: the
    // first error is the one to report, and no file may be left behind
    if (!closing) closeAfterFailure(store, fd);
    fs.rmSync(path, { force: true });
    throw err;
  }
}

/** Close `fd` on the way out of a failure: the failure is what is reported, not a second error. */
function closeAfterFailure(store: HasFs, fd: number): void {
  try {
    store.fs.closeSync(fd);
  } catch {
    // the fd is freed even when close fails
  }
}

/**
 * Append `bytes` to `file` (created if missing) where it is: never through a link, never to a FIFO or a
 * device. .gen/ can be committed, and an append follows a link there as any open does. Anything but a
 * regular file is refused (EGJ_BAD_PATH, naming it) before a byte is written.
 */
export function appendNoFollow(store: HasFs, file: string, bytes: Uint8Array): void {
  const { fs } = store;
  let fd: number;
  try {
    fd = fs.openSync(
      file,
      constants.O_WRONLY |
        constants.O_APPEND |
        constants.O_CREAT |
        constants.O_NOFOLLOW |
        constants.O_NONBLOCK,
      0o644,
    );
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ELOOP') throw notWritten(file, 'a symbolic link');
    if (code === 'ENXIO' || code === 'EISDIR') throw notWritten(file, 'not a regular file');
    throw IoError.wrap('open', file, err);
  }
  try {
    if (!fs.fstatSync(fd).isFile()) throw notWritten(file, 'not a regular file');
    let off = 0;
    while (off < bytes.length) off += fs.writeSync(fd, bytes, off, bytes.length - off);
  } finally {
    closeAfterFailure(store, fd);
  }
}

function notWritten(file: string, what: string): UsageError {
  return new UsageError(
    'EGJ_BAD_PATH',
    `${file}: ${what}; genjob writes only inside .gen/'s own directories, never through a link, so nothing was written: delete it`,
  );
}

/** Write `bytes` to a fresh, fsynced file in `dir` named `<prefix><pid>-…`; returns its path. */
export function writeTempFile(
  store: HasFs,
  dir: string,
  bytes: Uint8Array,
  mode = 0o644,
  prefix = '.tmp-',
): string {
  const path = tmpName(dir, prefix);
  createExclusive(store, path, bytes, mode);
  return path;
}

/**
 * Whether an O_EXCL create or a link of `target` that failed with `err` lost to a file already there.
 * EEXIST says so; over sshfs a lost race can come back as EPERM instead (the server's EEXIST travels as
 * a generic SFTP failure when the client had not seen the file yet), so any error with `target`
 * present counts as lost too.
 */
export function lostToExisting(store: HasFs, target: string, err: unknown): boolean {
  if (errnoOf(err) === 'EEXIST') return true;
  try {
    store.fs.lstatSync(target);
    return true;
  } catch {
    return false;
  }
}

/** Publish `bytes` at `target` unless something is already there. Returns false when it was. */
export function publishExclusive(store: Store, target: string, bytes: Uint8Array): boolean {
  const { fs } = store;
  const tmp = writeTempFile(store, store.layout.tmp, bytes);
  let created = true;
  try {
    fs.linkSync(tmp, target);
  } catch (err) {
    if (!lostToExisting(store, target, err)) {
      fs.rmSync(tmp, { force: true });
      throw IoError.wrap('link', target, err);
    }
    created = false;
  }
  fs.unlinkSync(tmp);
  if (created) fsyncDir(store, dirname(target));
  return created;
}

/**
 * publishExclusive of `bytes` at `target`, then the same bytes replaced in at `alias` from the same fsynced
 * temp: link it to `target`, fsync that directory, rename it over `alias`, fsync that directory. Each file
 * gets the replace and publish steps in the same order as before, and the second copy needs no write and
 * no fsync of its own (an attempt record and its lease: equal bytes, one inode). Only for an `alias` that is
 * never written in place (a lease is replaced by rename and beaten by utimes, so the record's mtime moves
 * with it: nothing reads that). False, with nothing left, when `target` was published first by another.
 */
export function publishWithAlias(store: Store, target: string, alias: string, bytes: Uint8Array): boolean {
  const { fs } = store;
  const tmp = writeTempFile(store, store.layout.tmp, bytes);
  try {
    fs.linkSync(tmp, target);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    if (lostToExisting(store, target, err)) return false;
    throw IoError.wrap('link', target, err);
  }
  try {
    fsyncDir(store, dirname(target));
    fs.renameSync(tmp, alias);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw IoError.wrap('rename', alias, err); // a directory fsync's IoError passes as it is
  }
  fsyncDir(store, dirname(alias));
  return true;
}

/** A file staged for publishStaged: fsynced bytes in .gen/tmp, to be published at `target`. */
export interface StagedFile {
  tmp: string;
  target: string;
}

/** The first half of publishExclusive: `bytes` in a fresh, fsynced temp in .gen/tmp. */
export function stageExclusive(store: Store, target: string, bytes: Uint8Array): StagedFile {
  return { tmp: writeTempFile(store, store.layout.tmp, bytes), target };
}

/**
 * publishExclusive for a batch, with one fsync per target directory instead of one per file: link each temp
 * to its target (EEXIST: left alone, reported false), unlink it, then fsync each directory that got a new
 * entry, once. Nothing in the batch is durable before this returns. On an error the remaining temps go.
 */
export function publishStaged(store: Store, staged: readonly StagedFile[]): boolean[] {
  const { fs } = store;
  const created: boolean[] = [];
  const dirs = new Set<string>();
  try {
    for (const { tmp, target } of staged) {
      try {
        fs.linkSync(tmp, target);
        created.push(true);
        dirs.add(dirname(target));
      } catch (err) {
        if (!lostToExisting(store, target, err)) throw IoError.wrap('link', target, err);
        created.push(false);
      }
      fs.unlinkSync(tmp);
    }
  } catch (err) {
    discardStaged(store, staged);
    throw err;
  }
  for (const dir of dirs) fsyncDir(store, dir);
  return created;
}

/** Remove the temps of files staged but not published (best effort: sweepStaleTemps gets any left). */
export function discardStaged(store: Store, staged: readonly StagedFile[]): void {
  for (const { tmp } of staged) {
    try {
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: without force a missing temp throws ENOENT, which the catch below swallows
      store.fs.rmSync(tmp, { force: true });
    } catch {
      // a crash or an I/O error: the temp carries our pid and the sweeper removes it later
    }
  }
}

/** Atomically replace (or create) `target` with `bytes`. */
export function replaceFile(store: HasFs, target: string, bytes: Uint8Array, mode = 0o644): void {
  const tmp = writeTempFile(store, dirname(target), bytes, mode);
  try {
    store.fs.renameSync(tmp, target);
  } catch (err) {
    store.fs.rmSync(tmp, { force: true });
    throw IoError.wrap('rename', target, err);
  }
  fsyncDir(store, dirname(target));
}

/**
 * replaceFile without its two fsyncs, for a record that is only ever advisory: readers see the old bytes
 * or the new, never a mix, but a crash of the machine may lose or empty it. A lock's owner record is one:
 * read as no record, the lock is judged by its intent or its staleness, and after a reboot every holder
 * is gone and its lock, no longer refreshed, goes stale. Two fsyncs per lock taken are what this saves.
 */
export function replaceAdvisory(store: HasFs, target: string, bytes: Uint8Array, mode = 0o644): void {
  const tmp = tmpName(dirname(target), '.tmp-');
  createExclusive(store, tmp, bytes, mode, false);
  try {
    store.fs.renameSync(tmp, target);
  } catch (err) {
    store.fs.rmSync(tmp, { force: true });
    throw IoError.wrap('rename', target, err);
  }
}

/** Move a file between state directories. Throws an error with errno ENOENT (errnoOf) when `from` is gone. */
export function moveState(store: Store, from: string, to: string): void {
  store.fs.renameSync(from, to);
  fsyncDir(store, dirname(to));
  if (dirname(from) !== dirname(to)) fsyncDir(store, dirname(from));
}

/** A temp file's name as publish/replace make it: `.tmp-<pid>-[<start>-<n>-]…`. */
const TEMP_NAME = /^\.tmp-(\d+)-(?:(\d+)-\d+-)?/;

/**
 * Remove `.tmp-<pid>-*` files a crash left inside publish/replace (in .gen/tmp, leases/, objects/): those of
 * a process that no longer exists (pid gone, or reused: the start time in the name differs), or older than
 * `maxAgeMs`. Returns how many were removed. apply and reap run it; see also sweep-staging.ts for work.
 * `names`: the temp names to sweep (pid, then start time, as its groups), for a writer with names of its own.
 */
export function sweepStaleTemps(
  store: Store,
  maxAgeMs = 3_600_000,
  now = Date.now(),
  dirs: readonly string[] = [store.layout.tmp, store.layout.dir('leases'), store.layout.dir('objects')],
  names: RegExp = TEMP_NAME,
): number {
  let removed = 0;
  for (const dir of dirs) {
    let here = 0;
    for (const name of readdirOrEmpty(store, dir)) {
      const m = names.exec(name);
      const pid = Number(m?.[1]);
      if (!pid) continue;
      const start = Number(m?.[2] ?? 0);
      const path = join(dir, name);
      // Stryker disable next-line BooleanLiteral: never read as set here: the try assigns it or the loop continues
      let old = false;
      try {
        old = now - store.fs.lstatSync(path).mtimeMs > maxAgeMs;
      } catch {
        continue; // gone already
      }
      const gone = pid !== process.pid && (!pidAlive(pid) || ownerGone({ ...thisProcess(), pid, start }));
      if (!old && !gone) continue;
      store.fs.rmSync(path, { force: true });
      here += 1;
    }
    if (here > 0) fsyncDir(store, dir);
    removed += here;
  }
  return removed;
}

/**
 * Read a whole file, or undefined when it does not exist. It must be a regular file (never followed
 * through a symlink, never a FIFO that would block) of at most `maxBytes` (read-record.ts).
 */
export function readIfExists(
  store: Store,
  path: string,
  maxBytes = Number.MAX_SAFE_INTEGER,
): Buffer | undefined {
  return readRecordFile(store.fs, path, maxBytes);
}

/**
 * For commands that only look (status, show): a record that is not a readable regular file reads as
 * no bytes, so it shows as unreadable instead of failing (or hanging) the whole listing.
 */
export function peekRecord(store: Store, path: string): Buffer | undefined {
  try {
    return readRecord(store, path);
  } catch (err) {
    if (err instanceof RecordUnreadableError) return Buffer.alloc(0);
    throw err;
  }
}

/** A record of .gen/ (a job file, receipt, lease, attempt): readIfExists with the record size cap. */
export function readRecord(store: Store, path: string): Buffer | undefined {
  return readRecordFile(store.fs, path, MAX_RECORD_BYTES);
}

export function exists(store: HasFs, path: string): boolean {
  try {
    store.fs.lstatSync(path);
    return true;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false;
    throw err;
  }
}

/** The names in a directory, or none when it does not exist (yet); any other error is thrown. */
export function readdirOrEmpty(store: HasFs, dir: string): string[] {
  try {
    return store.fs.readdirSync(dir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return [];
    throw IoError.wrap('readdir', dir, err);
  }
}

/** Names in a directory ending in `suffix`, without it (e.g. the keys in queue/). */
export function listNames(store: Store, dir: string, suffix = '.json'): string[] {
  return readdirOrEmpty(store, dir)
    .filter((n) => n.endsWith(suffix) && !n.startsWith('.'))
    .map((n) => n.slice(0, n.length - suffix.length)) // a name from readdir has no '/': no basename needed
    .sort();
}
