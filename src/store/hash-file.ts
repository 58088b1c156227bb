// Streaming sha256 of a file with 1 MiB reads (the 64 KiB stream default is ~2x slower),
// so a 1 GiB input never sits in memory. Opens with O_NOFOLLOW: a symlink is never hashed through.
// The first read is 64 KiB and the buffer grows only when a file fills it: a fresh 1 MiB buffer per
// small file made GC most of the time of minting 2,000 small files (docs/performance.md).
import { createHash, hash as oneShot } from 'node:crypto';
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { ioErrorAt } from '../core/errors.js';

const CHUNK = 1024 * 1024;
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
  let buf = Buffer.allocUnsafe(FIRST_CHUNK);
  let total = 0;
  for (;;) {
    const { bytesRead } = await fh.read(buf, 0, buf.length, null);
    if (bytesRead === 0) break;
    hash.update(buf.subarray(0, bytesRead));
    onChunk?.(buf.subarray(0, bytesRead));
    total += bytesRead;
    if (bytesRead === buf.length && buf.length < CHUNK) buf = Buffer.allocUnsafe(CHUNK);
  }
  return { sha256: hash.digest('hex'), bytes: total };
}

/** Files up to this size are hashed with synchronous reads: one open/read/close instead of four thread-pool round trips. */
export const SMALL_FILE_BYTES = 256 * 1024;
const small = Buffer.allocUnsafe(SMALL_FILE_BYTES + 1);

/**
 * The same digest as hashFile, read synchronously; meant for files of at most SMALL_FILE_BYTES. With
 * `size` (from a stat just before), a read that comes back short with exactly that many bytes is taken
 * as the end of the file, which saves the read that would return 0: one open, read and close per file.
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
