// Streaming sha256 of a file with 4 MiB reads, two in turn (the 64 KiB stream default is ~2x slower),
// so a 1 GiB input never sits in memory. Opens with O_NOFOLLOW: a symlink is never hashed through.
// The first read is 64 KiB and the two big buffers are taken only when a file fills it: a fresh 1 MiB
// buffer per small file made GC most of the time of minting 2,000 small files (docs/performance.md).
import { createHash, hash as oneShot } from 'node:crypto';
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { ioErrorAt } from '../core/errors.js';

const CHUNK = 4 * 1024 * 1024;
const FIRST_CHUNK = 64 * 1024;

export interface FileDigest {
  sha256: string;
  bytes: number;
}

/** `onChunk` sees every chunk as it is hashed (e.g. a secret scanner), so a file is read once. */
export async function hashFile(path: string, onChunk?: (chunk: Buffer) => void): Promise<FileDigest> {
  // an fd's read or close error carries no path: name the file (errnoOf still sees ENOENT, ELOOP)
  return hashOpened(path, onChunk).catch((err) => {
    throw ioErrorAt(path, err);
  });
}

async function hashOpened(path: string, onChunk?: (chunk: Buffer) => void): Promise<FileDigest> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await hashHandle(fh, onChunk);
  } finally {
    await fh.close();
  }
}

/** The digest of what an open file holds from its current offset (the caller closes it). */
export async function hashHandle(fh: FileHandle, onChunk?: (chunk: Buffer) => void): Promise<FileDigest> {
  const hash = createHash('sha256');
  const first = Buffer.allocUnsafe(FIRST_CHUNK);
  let { bytesRead } = await fh.read(first, 0, first.length, null);
  if (bytesRead < first.length) {
    if (bytesRead > 0) {
      hash.update(first.subarray(0, bytesRead));
      onChunk?.(first.subarray(0, bytesRead));
    }
    // a short read is not the end (a pipe, a file still growing): read on until one returns 0
    return finishSerial(fh, hash, first, bytesRead, onChunk);
  }
  // A big file: two buffers, so the thread pool reads the next chunk while this thread hashes
  // and scans the one in hand (reading, then hashing, one after the other was ~25% slower).
  // A buffer is read into again only after its chunk was hashed and handed on synchronously.
  let inHand = Buffer.allocUnsafe(CHUNK);
  let spare = Buffer.allocUnsafe(CHUNK);
  let total = bytesRead;
  let next = fh.read(inHand, 0, CHUNK, null);
  hash.update(first);
  onChunk?.(first);
  for (;;) {
    ({ bytesRead } = await next);
    if (bytesRead === 0) break;
    // the next read goes into the spare buffer, whose chunk was handled in the last turn
    next = fh.read(spare, 0, CHUNK, null);
    const chunk = inHand.subarray(0, bytesRead);
    try {
      hash.update(chunk);
      onChunk?.(chunk);
    } catch (err) {
      // the read in flight is abandoned: its failure, if any, is not a second error
      next.catch(() => {});
      throw err;
    }
    total += bytesRead;
    [inHand, spare] = [spare, inHand];
  }
  return { sha256: hash.digest('hex'), bytes: total };
}

/** Read on into `buf` one chunk at a time, after `total` bytes already hashed. */
async function finishSerial(
  fh: FileHandle,
  hash: ReturnType<typeof createHash>,
  buf: Buffer,
  total: number,
  onChunk?: (chunk: Buffer) => void,
): Promise<FileDigest> {
  for (;;) {
    const { bytesRead } = await fh.read(buf, 0, buf.length, null);
    if (bytesRead === 0) break;
    hash.update(buf.subarray(0, bytesRead));
    onChunk?.(buf.subarray(0, bytesRead));
    total += bytesRead;
  }
  return { sha256: hash.digest('hex'), bytes: total };
}

/** Files up to this size are hashed with synchronous reads: one open/read/close instead of four thread-pool round trips. */
export const SMALL_FILE_BYTES = 256 * 1024;
const small = Buffer.allocUnsafe(SMALL_FILE_BYTES + 1);

/**
 * The same digest as hashFile, read synchronously; meant for files of at most SMALL_FILE_BYTES. With
 * `size` (from a stat just before, or the size a receipt claims), a read that comes back short with
 * exactly that many bytes is taken as the end of the file, which saves the read that would return 0: one
 * open, read and close per file. Any other size costs only that read: the file is still hashed to its end.
 */
export function hashSmallFileSync(
  path: string,
  onChunk?: (chunk: Buffer) => void,
  size?: number,
): FileDigest {
  try {
    return hashSmallOpened(path, onChunk, size);
  } catch (err) {
    throw ioErrorAt(path, err);
  }
}

function hashSmallOpened(path: string, onChunk?: (chunk: Buffer) => void, size?: number): FileDigest {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const first = readSync(fd, small, 0, small.length, null);
    if (first < small.length && first === size) {
      // the whole file in one read: one-shot hash, no Hash object
      const data = small.subarray(0, first);
      onChunk?.(data);
      return { sha256: oneShot('sha256', data, 'hex'), bytes: first };
    }
    const hash = createHash('sha256');
    let total = 0;
    for (let n = first; n > 0; n = readSync(fd, small, 0, small.length, null)) {
      hash.update(small.subarray(0, n));
      onChunk?.(small.subarray(0, n));
      total += n;
    }
    return { sha256: hash.digest('hex'), bytes: total };
  } finally {
    closeSync(fd);
  }
}
