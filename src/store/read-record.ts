// Read a file of .gen/ as hostile: open it with O_NOFOLLOW|O_NONBLOCK (a symlink fails, a FIFO does not
// block), fstat the descriptor for a regular file, and read at most `maxBytes`. A directory named
// <key>.json, a FIFO or a symlink to /dev/zero in queue/ thus ends as RecordUnreadableError, which the
// worker dead-letters, instead of an EISDIR bug, a hang that ignores SIGTERM, or a read without end.
import { constants } from 'node:fs';
import { errnoOf, IoError, RecordUnreadableError } from '../core/errors.js';
import type { FsPort } from './fs-port.js';

/** Job files, receipts, leases and attempts are far below this; anything above is not ours. */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;

const CHUNK = 64 * 1024;

function kindOf(st: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}): string {
  if (st.isDirectory()) return 'is a directory';
  if (st.isFIFO()) return 'is a FIFO';
  if (st.isSocket()) return 'is a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'is a device';
  return 'is not a regular file';
}

/**
 * An fd on `path` for reading, with its size, when it is a regular file; undefined when it does not
 * exist; RecordUnreadableError for a symlink, FIFO, socket, device or directory (closed again).
 */
export function openRegularFile(fs: FsPort, path: string): { fd: number; size: number } | undefined {
  let fd: number;
  try {
    fd = fs.openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new RecordUnreadableError(path, 'is a symbolic link');
    if (code === 'ENXIO') throw new RecordUnreadableError(path, 'is a socket');
    throw IoError.wrap('open', path, err);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new RecordUnreadableError(path, kindOf(st));
    return { fd, size: st.size };
  } catch (err) {
    fs.closeSync(fd);
    if (err instanceof RecordUnreadableError) throw err;
    throw IoError.wrap('stat', path, err);
  }
}

/** The whole file, or undefined when it does not exist; RecordUnreadableError for anything but a regular file within the cap. */
export function readRecordFile(
  fs: FsPort,
  path: string,
  maxBytes: number = MAX_RECORD_BYTES,
): Buffer | undefined {
  const opened = openRegularFile(fs, path);
  if (opened === undefined) return undefined;
  const { fd, size } = opened;
  try {
    if (size > maxBytes)
      throw new RecordUnreadableError(path, `is ${size} bytes, over the cap of ${maxBytes}`, maxBytes);
    // sized from the fstat, one byte over so growth shows: a record is one read into a buffer of its own
    // size (a small one comes from Node's pool) instead of 64 KiB reads, a second one to see the end,
    // and a copy; for a regular file a read shorter than asked is the end
    let buf = Buffer.allocUnsafe(size + 1);
    let total = 0;
    for (;;) {
      if (total === buf.length) {
        // it grew since the fstat: make room (the cap stops it below)
        const bigger = Buffer.allocUnsafe(Math.min(Math.max(2 * buf.length, CHUNK), maxBytes + 1));
        buf.copy(bigger, 0, 0, total);
        buf = bigger;
      }
      const n = fs.readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes)
        throw new RecordUnreadableError(path, `grew past the cap of ${maxBytes} bytes while read`, maxBytes);
      // the fstat's size reached by a read shorter than asked (the buffer has one byte more): the end
      if (total === size) break;
    }
    return buf.subarray(0, total);
  } catch (err) {
    if (err instanceof RecordUnreadableError) throw err;
    throw IoError.wrap('read', path, err);
  } finally {
    fs.closeSync(fd);
  }
}
