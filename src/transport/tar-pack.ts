// Write a deterministic tar stream of an explicit entry list: regular files only, mode 0644, uid/gid 0,
// empty owner names, mtime 0, a pax header only when a name or size needs one. Headers come from
// node-tar's Header; the stream is framed here because async tar.c() can silently truncate with
// hardlinked inputs (isaacs/node-tar#460). Each file is read once through O_NOFOLLOW with 1 MiB reads,
// hashed as it streams; a size change during the read or a digest other than expectSha256 throws.
// With `root`, every path component is opened without following links (open-beneath.ts).
// bundleSha256 names the stream by its index (headers + per-file digests), so no byte is hashed twice.
import { createHash, type Hash } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { Header, Pax } from 'tar';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { pathProblem } from '../core/paths.js';
import { InputChangedError, InputNotRegularError } from './archive-errors.js';
import { openBeneath } from './open-beneath.js';

export interface PackEntry {
  name: string;
  /** A file to read; with `root`, a contract path under root opened without following any link. */
  file?: string;
  root?: string;
  bytes?: Uint8Array;
  expectSha256?: string;
}

export interface PackedFile {
  name: string;
  sha256: string;
  bytes: number;
}

const BLOCK = 512;
const CHUNK = 1024 * 1024;
const EPOCH = new Date(0);

/** Buffers output into 1 MiB chunks; a chunk handed to the sink is never touched again. */
class ChunkWriter {
  #buf = Buffer.allocUnsafe(CHUNK);
  #off = 0;
  constructor(private readonly sink: (chunk: Buffer) => Promise<void>) {}

  /** Free space in the current chunk, flushing first when it is full. */
  async space(): Promise<Buffer> {
    if (this.#off === CHUNK) await this.flush();
    return this.#buf.subarray(this.#off);
  }
  advance(n: number): void {
    this.#off += n;
  }
  async write(data: Uint8Array): Promise<void> {
    let at = 0;
    while (at < data.length) {
      const free = await this.space();
      const n = Math.min(free.length, data.length - at);
      free.set(data.subarray(at, at + n));
      this.advance(n);
      at += n;
    }
  }
  async zeros(n: number): Promise<void> {
    while (n > 0) {
      const free = await this.space();
      const k = Math.min(free.length, n);
      free.fill(0, 0, k);
      this.advance(k);
      n -= k;
    }
  }
  async flush(): Promise<void> {
    if (this.#off === 0) return;
    const out = this.#buf.subarray(0, this.#off);
    this.#buf = Buffer.allocUnsafe(CHUNK);
    this.#off = 0;
    await this.sink(out);
  }
}

function headerBlock(
  path: string,
  size: number,
  type: 'File' | 'ExtendedHeader',
): { block: Buffer; needPax: boolean } {
  const block = Buffer.alloc(BLOCK);
  const h = new Header({ path, mode: 0o644, uid: 0, gid: 0, size, mtime: EPOCH, type, uname: '', gname: '' });
  const needPax = h.encode(block);
  return { block, needPax };
}

/** Header (plus a pax header first when the name is long or non-ASCII, or the size is over 8 GiB). */
function entryHeader(name: string, size: number): Buffer {
  const main = headerBlock(name, size, 'File');
  if (!main.needPax) return main.block;
  const body = Buffer.from(new Pax({ path: name, size }).encodeBody(), 'utf8');
  const pax = headerBlock('PaxHeader', body.length, 'ExtendedHeader');
  const padded = Buffer.alloc(BLOCK * Math.ceil(body.length / BLOCK));
  body.copy(padded);
  return Buffer.concat([pax.block, padded, main.block]);
}

/**
 * The digest that names a tar written by packTar: sha256 over, for each entry in order, its header
 * blocks exactly as written followed by the 32-byte sha256 of its bytes. The headers fix every name,
 * size and the (zero) padding, so this commits to the whole stream as sent, while costing no second
 * pass over the data (the per-file digests are computed anyway).
 */
export function bundleSha256(packed: readonly PackedFile[]): string {
  const hash = createHash('sha256');
  for (const f of packed) {
    hash.update(entryHeader(f.name, f.bytes));
    hash.update(Buffer.from(f.sha256, 'hex'));
  }
  return hash.digest('hex');
}

function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

function checkEntry(e: PackEntry, seen: Set<string>): void {
  const problem = pathProblem(e.name);
  if (problem !== null)
    throw new UsageError('EGJ_PACK_ENTRY', `pack entry ${JSON.stringify(e.name)}: ${problem}`);
  if ((e.file === undefined) === (e.bytes === undefined)) {
    throw new UsageError(
      'EGJ_PACK_ENTRY',
      `pack entry ${JSON.stringify(e.name)}: give exactly one of file or bytes`,
    );
  }
  if (seen.has(e.name))
    throw new UsageError('EGJ_PACK_ENTRY', `pack entry ${JSON.stringify(e.name)}: named twice`);
  seen.add(e.name);
}

async function openRegular(file: string): Promise<{ fh: FileHandle; size: number }> {
  let fh: FileHandle;
  try {
    fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if (errnoOf(err) === 'ELOOP') throw new InputNotRegularError(file, 'a symbolic link', { cause: err });
    throw new IoError('open', file, err);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile())
      throw new InputNotRegularError(file, st.isDirectory() ? 'a directory' : 'not a regular file');
    return { fh, size: st.size };
  } catch (err) {
    await fh.close();
    throw err;
  }
}

async function openUnder(root: string, rel: string): Promise<{ fh: FileHandle; size: number }> {
  const fh = await openBeneath(root, rel);
  try {
    return { fh, size: (await fh.stat()).size };
  } catch (err) {
    await fh.close();
    throw new IoError('fstat', rel, err);
  }
}

/** Stream exactly `size` bytes of `fh` into the writer, hashing them; throws if the file shrank or grew. */
async function streamFile(
  fh: FileHandle,
  file: string,
  size: number,
  out: ChunkWriter,
  hash: Hash,
): Promise<void> {
  let left = size;
  while (left > 0) {
    const free = await out.space();
    const want = Math.min(free.length, left);
    const { bytesRead } = await fh.read(free, 0, want, null);
    if (bytesRead === 0)
      throw new InputChangedError(file, `shrank while being packed (expected ${size} bytes)`);
    hash.update(free.subarray(0, bytesRead));
    out.advance(bytesRead);
    left -= bytesRead;
  }
  const probe = Buffer.allocUnsafe(1);
  const { bytesRead } = await fh.read(probe, 0, 1, null);
  if (bytesRead !== 0) throw new InputChangedError(file, `grew while being packed (expected ${size} bytes)`);
}

/**
 * Write a tar of `entries` to `sink` in order, ending with the two zero blocks. Returns what was
 * packed (name, sha256, size) to check against the manifest. On a throw the sink has seen a partial
 * archive without end blocks, which a reader refuses as truncated.
 */
export async function packTar(
  entries: readonly PackEntry[],
  sink: (chunk: Buffer) => Promise<void>,
): Promise<PackedFile[]> {
  const seen = new Set<string>();
  for (const e of entries) checkEntry(e, seen);
  const out = new ChunkWriter(sink);
  const packed: PackedFile[] = [];
  for (const e of entries) {
    const hash = createHash('sha256');
    let size: number;
    if (e.bytes !== undefined) {
      size = e.bytes.length;
      await out.write(entryHeader(e.name, size));
      hash.update(e.bytes);
      await out.write(e.bytes);
    } else {
      const file = e.file!;
      const opened = e.root === undefined ? await openRegular(file) : await openUnder(e.root, file);
      size = opened.size;
      try {
        await out.write(entryHeader(e.name, size));
        await streamFile(opened.fh, file, size, out, hash);
      } finally {
        await opened.fh.close();
      }
    }
    await out.zeros(padding(size));
    const sha256 = hash.digest('hex');
    if (e.expectSha256 !== undefined && sha256 !== e.expectSha256) {
      const what = e.file ?? e.name;
      throw new InputChangedError(
        what,
        `hashes to ${sha256.slice(0, 12)}, the job recorded ${e.expectSha256.slice(0, 12)}`,
      );
    }
    packed.push({ name: e.name, sha256, bytes: size });
  }
  await out.zeros(2 * BLOCK);
  await out.flush();
  return packed;
}
