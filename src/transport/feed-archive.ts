// Feed the bytes of a plain or gzip archive (told apart by the gzip magic 1f 8b) to `push`, as Buffers.
// gzip output is capped at maxRatio times the compressed bytes read so far (EGJ_ARCHIVE_BOMB), checked
// per output chunk so a bomb is stopped within one chunk; a gzip error is EGJ_ARCHIVE_TRUNCATED (stream
// ended early) or EGJ_ARCHIVE_CORRUPT. A throw from `push` stops reading; the source is not drained.
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { ArchiveRejectedError } from './archive-errors.js';
import { rejectArchive as reject } from './reject-archive.js';

function asBuffer(c: Uint8Array): Buffer {
  return Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
}

/** Yield `head` then the rest of `it`; returning early closes `it`. */
async function* resume(head: Buffer, it: AsyncIterator<Uint8Array>): AsyncGenerator<Buffer> {
  let done = false;
  try {
    if (head.length > 0) yield head;
    for (;;) {
      const r = await it.next();
      if (r.done) {
        done = true;
        return;
      }
      yield asBuffer(r.value);
    }
  } finally {
    if (!done) await it.return?.();
  }
}

/** Read `source` to its end, gunzipping it if it starts with the gzip magic, and push every chunk. */
export async function feedArchive(
  source: AsyncIterable<Uint8Array>,
  push: (chunk: Buffer) => void,
  maxRatio: number,
): Promise<void> {
  const it = source[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headLen = 0;
  let ended = false;
  while (headLen < 2) {
    const r = await it.next();
    if (r.done) {
      ended = true;
      break;
    }
    head.push(asBuffer(r.value));
    headLen += r.value.length;
  }
  const first = Buffer.concat(head);
  const rest = ended ? [first] : resume(first, it);
  if (!(first[0] === 0x1f && first[1] === 0x8b)) {
    for await (const chunk of rest) push(chunk);
    return;
  }
  let inBytes = 0;
  let outBytes = 0;
  const gunzip = createGunzip();
  let zlibError: unknown;
  gunzip.on('error', (err) => {
    zlibError = err;
  });
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of rest) {
      inBytes += chunk.length;
      yield chunk;
    }
  }
  try {
    await pipeline(counted(), gunzip, async (out: AsyncIterable<Buffer>) => {
      for await (const chunk of out) {
        outBytes += chunk.length;
        if (outBytes > maxRatio * inBytes) {
          reject(
            'EGJ_ARCHIVE_BOMB',
            undefined,
            `gzip expands more than ${maxRatio}x (${outBytes} bytes from ${inBytes})`,
          );
        }
        push(chunk);
      }
    });
  } catch (err) {
    if (err !== zlibError || err instanceof ArchiveRejectedError) throw err;
    const truncated = (err as { code?: string }).code === 'Z_BUF_ERROR';
    reject(
      truncated ? 'EGJ_ARCHIVE_TRUNCATED' : 'EGJ_ARCHIVE_CORRUPT',
      undefined,
      `gzip: ${(err as Error).message}`,
      err,
    );
  }
}
