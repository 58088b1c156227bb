// Builders of crafted tar archives for tests, including entries node-tar's packer would refuse to make
// (links, devices, '..', NUL in a pax path, bad checksums). Headers are raw 512-byte ustar blocks with
// a correct checksum unless asked otherwise; every builder returns plain Buffers to concatenate, and
// the streaming ones (endless, gzip bomb) never hold more than a chunk in memory.
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';

export const BLOCK = 512;

export interface RawHeader {
  /** Written raw into the 100-byte name field (bytes beyond 100 are cut). */
  name: string | Buffer;
  /** Type flag character: '0' file, '1' hard link, '2' symlink, '3' char dev, '4' block dev, '5' dir, '6' FIFO, 'x', 'g', 'L', 'K', ... */
  type?: string;
  size?: number;
  linkname?: string;
  prefix?: string;
  mode?: number;
  uid?: number;
  gid?: number;
  devmajor?: number;
  devminor?: number;
  /** Write a wrong checksum. */
  badChecksum?: boolean;
}

function octal(buf: Buffer, off: number, width: number, value: number): void {
  buf.write(value.toString(8).padStart(width - 1, '0') + '\0', off, width, 'latin1');
}

/** One 512-byte ustar header block. */
export function rawHeader(h: RawHeader): Buffer {
  const b = Buffer.alloc(BLOCK);
  const name = typeof h.name === 'string' ? Buffer.from(h.name, 'utf8') : h.name;
  name.copy(b, 0, 0, Math.min(name.length, 100));
  octal(b, 100, 8, h.mode ?? 0o644);
  octal(b, 108, 8, h.uid ?? 0);
  octal(b, 116, 8, h.gid ?? 0);
  octal(b, 124, 12, h.size ?? 0);
  octal(b, 136, 12, 0);
  b.write(h.type ?? '0', 156, 1, 'latin1');
  if (h.linkname !== undefined) b.write(h.linkname, 157, 100, 'utf8');
  b.write('ustar\u000000', 257, 8, 'latin1');
  octal(b, 329, 8, h.devmajor ?? 0);
  octal(b, 337, 8, h.devminor ?? 0);
  if (h.prefix !== undefined) b.write(h.prefix, 345, 155, 'utf8');
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of b) sum += byte;
  if (h.badChecksum) sum += 1;
  b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'latin1');
  return b;
}

/** `data` followed by zeros up to the next 512-byte boundary. */
export function padded(data: Buffer): Buffer {
  const out = Buffer.alloc(Math.ceil(data.length / BLOCK) * BLOCK);
  data.copy(out);
  return out;
}

/** A regular file entry (header + padded body). `size` may lie about the body length. */
export function fileEntry(
  name: string | Buffer,
  content: string | Buffer = '',
  opts: { size?: number; type?: string } = {},
) {
  const body = typeof content === 'string' ? Buffer.from(content) : content;
  return Buffer.concat([
    rawHeader({ name, type: opts.type ?? '0', size: opts.size ?? body.length }),
    padded(body),
  ]);
}

export function symlinkEntry(name: string, target: string): Buffer {
  return rawHeader({ name, type: '2', linkname: target, mode: 0o777 });
}

export function hardlinkEntry(name: string, target: string): Buffer {
  return rawHeader({ name, type: '1', linkname: target });
}

export function charDeviceEntry(name: string, major = 1, minor = 3): Buffer {
  return rawHeader({ name, type: '3', devmajor: major, devminor: minor, mode: 0o666 });
}

export function blockDeviceEntry(name: string, major = 8, minor = 0): Buffer {
  return rawHeader({ name, type: '4', devmajor: major, devminor: minor, mode: 0o660 });
}

export function fifoEntry(name: string): Buffer {
  return rawHeader({ name, type: '6' });
}

export function dirEntry(name: string): Buffer {
  return rawHeader({ name: name.endsWith('/') ? name : `${name}/`, type: '5', mode: 0o755 });
}

/** One pax record "<len> key=value\n" (the length counts itself). */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len += 1;
  return `${len}${body}`;
}

/** A pax extended header ('x', or 'g' when global) with the given records, or a raw body. */
export function paxHeader(records: Record<string, string> | Buffer, opts: { global?: boolean } = {}): Buffer {
  const body = Buffer.isBuffer(records)
    ? records
    : Buffer.from(
        Object.entries(records)
          .map(([k, v]) => paxRecord(k, v))
          .join(''),
        'utf8',
      );
  const type = opts.global ? 'g' : 'x';
  return Buffer.concat([rawHeader({ name: 'PaxHeader', type, size: body.length }), padded(body)]);
}

/** A file whose real name travels in a pax `path` record (so it may contain anything, NUL included). */
export function paxFileEntry(name: string, content: string | Buffer = ''): Buffer {
  return Buffer.concat([paxHeader({ path: name }), fileEntry('placeholder', content)]);
}

/** A GNU long-name ('L') entry naming the next entry. */
export function gnuLongName(name: string): Buffer {
  const body = Buffer.from(`${name}\0`, 'utf8');
  return Buffer.concat([rawHeader({ name: '././@LongLink', type: 'L', size: body.length }), padded(body)]);
}

/** The two zero blocks that end an archive. */
export function endBlocks(): Buffer {
  return Buffer.alloc(2 * BLOCK);
}

/** Entries followed by the end-of-archive blocks. */
export function tarOf(...entries: Buffer[]): Buffer {
  return Buffer.concat([...entries, endBlocks()]);
}

/** Yield `buf` in chunks of `size` bytes (copies, so a reader cannot rely on shared memory). */
export async function* chunked(buf: Buffer, size = 64 * 1024): AsyncGenerator<Buffer> {
  for (let at = 0; at < buf.length; at += size) yield Buffer.from(buf.subarray(at, at + size));
}

export interface SourceStats {
  /** Bytes handed out so far. */
  bytes: number;
  /** True once the consumer stopped iterating (return() was called). */
  closed: boolean;
}

/** A source that never ends: `head`, then `unit` forever. `stats` shows how much was read. */
export function endless(
  unit: Buffer,
  head: Buffer = Buffer.alloc(0),
): { source: AsyncIterable<Buffer>; stats: SourceStats } {
  const stats: SourceStats = { bytes: 0, closed: false };
  async function* gen(): AsyncGenerator<Buffer> {
    try {
      if (head.length > 0) {
        stats.bytes += head.length;
        yield head;
      }
      for (;;) {
        stats.bytes += unit.length;
        yield unit;
      }
    } finally {
      stats.closed = true;
    }
  }
  return { source: gen(), stats };
}

/** A tar holding one file of `bytes` zeros, generated lazily in 1 MiB pieces. */
export async function* zeroFileTar(name: string, bytes: number): AsyncGenerator<Buffer> {
  yield rawHeader({ name, size: bytes });
  const mib = Buffer.alloc(1024 * 1024);
  let left = bytes;
  while (left > 0) {
    const n = Math.min(left, mib.length);
    yield n === mib.length ? mib : mib.subarray(0, n);
    left -= n;
  }
  const pad = (BLOCK - (bytes % BLOCK)) % BLOCK;
  yield Buffer.alloc(pad + 2 * BLOCK);
}

/** gzip `source` as it is read; stopping early stops the compressor and the source. */
export function gzipped(
  source: AsyncIterable<Buffer>,
  level = 9,
): { source: AsyncIterable<Buffer>; stats: SourceStats } {
  const stats: SourceStats = { bytes: 0, closed: false };
  async function* gen(): AsyncGenerator<Buffer> {
    const input = Readable.from(source);
    const gz = createGzip({ level });
    input.pipe(gz);
    try {
      for await (const chunk of gz as AsyncIterable<Buffer>) {
        stats.bytes += chunk.length;
        yield chunk;
      }
    } finally {
      stats.closed = true;
      input.destroy();
      gz.destroy();
    }
  }
  return { source: gen(), stats };
}

/** A gzip bomb: a valid tar of one file of `bytes` zeros (default 1 GiB), compressed as it streams. */
export function gzipBomb(name: string, bytes = 1024 ** 3) {
  return gzipped(zeroFileTar(name, bytes));
}

/** Where each numeric field of a ustar header lies: [offset, width]. */
export const NUMERIC_FIELDS = {
  mode: [100, 8],
  uid: [108, 8],
  gid: [116, 8],
  size: [124, 12],
  mtime: [136, 12],
  devmajor: [329, 8],
  devminor: [337, 8],
} as const;

/** `header` with one numeric field rewritten in base-256 as 2^(8·(width−1))−1, far above 2^53; checksum fixed. */
export function base256Huge(header: Buffer, field: keyof typeof NUMERIC_FIELDS): Buffer {
  const b = Buffer.from(header);
  const [off, width] = NUMERIC_FIELDS[field];
  b[off] = 0x80;
  b.fill(0xff, off + 1, off + width);
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
  return b;
}
