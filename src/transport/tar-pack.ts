// Write a deterministic tar stream of an explicit entry list: regular files only, mode 0644, uid/gid 0,
// empty owner names, mtime 0, a pax header only when a name or size needs one (tar-header.ts). The
// stream is framed here because async tar.c() can silently truncate with
// hardlinked inputs (isaacs/node-tar#460). Each file is read once through O_NOFOLLOW — up to 256 KiB in
// one synchronous read of size + 1 bytes, bigger ones with 1 MiB reads — and hashed as it streams; a size
// change during the read or a digest other than expectSha256 throws.
// With `root`, every path component is opened without following links (open-beneath.ts).
// bundleSha256 names the stream by its index (headers + per-file digests), so no byte is hashed twice.
// `verified` tells a sink that sends while packing which of the bytes it holds are checked.
import { createHash, type Hash } from 'node:crypto';
import { closeSync, constants, openSync, read, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { pathProblem } from '../core/paths.js';
import { InputChangedError, InputNotRegularError } from './archive-errors.js';
import { BeneathOpener, type OpenedFile, regularOpened } from './open-beneath.js';
import { entryHeader } from './tar-header.js';

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
/** Files up to this size are read in one synchronous read; bigger ones stream with 1 MiB async reads. */
const SMALL_FILE_BYTES = 256 * 1024;
/** Let the event loop run after this many small files read synchronously. */
const YIELD_EVERY = 256;
const readAsync = promisify(read);
/** With `verified`, checked bytes are handed on once this many are waiting (or at the end of a big file). */
const RELEASE_BYTES = 1024 * 1024;

/**
 * Where packTar's output goes. The promise settling to 'done' says the sink is finished with the bytes
 * (it wrote them out): the writer may fill that memory again. Settling to anything else says the sink
 * keeps the very bytes: they are never touched again.
 */
export type ChunkSink = (chunk: Buffer) => Promise<unknown>;

/**
 * Buffers output into chunks. A chunk the sink keeps is never touched again, and chunks then start at
 * 1 MiB and double up to `maxChunk`: a sink that keeps every chunk holds a big bundle in a few large
 * buffers, and each new buffer is external memory that can start a V8 GC. A buffer the sink was done
 * with, every part of it, is filled again: fresh memory costs a page fault per 4 KiB page on first touch
 * (~10 us each on the virtual machines measured, more than copying the page), so a bundle that goes
 * through a file is packed in the same 1 MiB over and over.
 */
class ChunkWriter {
  #size = CHUNK;
  #buf: Buffer | undefined; // allocated when the first byte for it comes, so the last flush makes none
  #off = 0;
  #start = 0; // bytes of #buf before this were already handed to the sink (release)
  /** The sink was done with every part of #buf handed to it so far (none was kept). */
  #reusable = true;
  /** Bytes written so far, in all. */
  total = 0;
  constructor(
    private readonly sink: ChunkSink,
    private readonly maxChunk = CHUNK,
  ) {}

  /** Free space in the current chunk, flushing first when it is full. */
  async space(): Promise<Buffer> {
    if (this.#off === this.#size) await this.flush();
    this.#buf ??= Buffer.allocUnsafe(this.#size);
    return this.#buf.subarray(this.#off);
  }
  advance(n: number): void {
    this.#off += n;
    this.total += n;
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
    if (this.#buf === undefined || this.#off === 0) return;
    const out = this.#buf.subarray(this.#start, this.#off);
    if (out.length > 0 && (await this.sink(out)) !== 'done') this.#reusable = false;
    this.#off = 0;
    this.#start = 0;
    if (this.#reusable) return; // every byte of it written out: the same memory is filled again
    this.#buf = undefined;
    this.#reusable = true;
    this.#size = Math.min(this.maxChunk, this.#size * 2);
  }
  /** Hand what is written so far to the sink without starting a new buffer (the bytes before #off never change). */
  async release(): Promise<void> {
    if (this.#buf === undefined || this.#off === this.#start) return;
    const out = this.#buf.subarray(this.#start, this.#off);
    this.#start = this.#off;
    if ((await this.sink(out)) !== 'done') this.#reusable = false;
  }
  /** Bytes written but not yet handed to the sink. */
  get pending(): number {
    return this.#off - this.#start;
  }
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

function openRegular(file: string): OpenedFile {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if (errnoOf(err) === 'ELOOP') throw new InputNotRegularError(file, 'a symbolic link', { cause: err });
    throw IoError.wrap('open', file, err);
  }
  return regularOpened(fd, file, file);
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // read-only: a failed close loses nothing
  }
}

/**
 * Exactly `size` bytes of a small file, with one read of size + 1 bytes into `scratch` (which must
 * hold them): the extra byte, when it comes, says the file grew since its size was taken.
 */
function readSmall(opened: OpenedFile, file: string, size: number, scratch: Buffer): Buffer {
  let got = 0;
  for (;;) {
    const want = size + 1 - got;
    let n: number;
    try {
      n = readSync(opened.fd, scratch, got, want, null);
    } catch (err) {
      throw IoError.wrap('read', opened.path, err);
    }
    got += n;
    if (got > size) throw new InputChangedError(file, `grew while being packed (expected ${size} bytes)`);
    // short with all `size` bytes: the end of the file (a read returning 0 would only say so again)
    if (n === 0 || (n < want && got === size)) break;
  }
  if (got < size) throw new InputChangedError(file, `shrank while being packed (expected ${size} bytes)`);
  return scratch.subarray(0, size);
}

/** Stream exactly `size` bytes of the opened file into the writer, hashing them; throws if the file shrank or grew. */
async function streamFile(
  opened: OpenedFile,
  file: string,
  size: number,
  out: ChunkWriter,
  hash: Hash,
): Promise<void> {
  const readAt = (buf: Buffer, length: number) =>
    readAsync(opened.fd, buf, 0, length, null).catch((err: unknown) => {
      throw IoError.wrap('read', opened.path, err);
    });
  let left = size;
  while (left > 0) {
    const free = await out.space();
    const want = Math.min(free.length, left, CHUNK);
    const { bytesRead } = await readAt(free, want);
    if (bytesRead === 0)
      throw new InputChangedError(file, `shrank while being packed (expected ${size} bytes)`);
    hash.update(free.subarray(0, bytesRead));
    out.advance(bytesRead);
    left -= bytesRead;
  }
  const { bytesRead } = await readAt(Buffer.allocUnsafe(1), 1);
  if (bytesRead !== 0) throw new InputChangedError(file, `grew while being packed (expected ${size} bytes)`);
}

/**
 * Write a tar of `entries` to `sink` in order, ending with the two zero blocks. Returns what was
 * packed (name, sha256, size) to check against the manifest. On a throw the sink has seen a partial
 * archive without end blocks, which a reader refuses as truncated.
 */
export async function packTar(
  entries: readonly PackEntry[],
  sink: ChunkSink,
  opts: {
    maxChunkBytes?: number;
    /**
     * Called after each entry matched its expectSha256 (or had none), with the count of entries so far
     * and how many bytes of the stream the sink has that are all checked (small entries are handed on
     * in batches of RELEASE_BYTES, a big one at once). Bytes past that may be in the sink already (a
     * chunk filled mid-file): they are not checked yet.
     */
    verified?: (upTo: number, entries: number) => void;
  } = {},
): Promise<PackedFile[]> {
  const seen = new Set<string>();
  for (const e of entries) checkEntry(e, seen);
  const out = new ChunkWriter(sink, opts.maxChunkBytes);
  const packed: PackedFile[] = [];
  let scratch: Buffer | undefined; // this call's own: another packTar may run while this one awaits
  let smallSinceYield = 0;
  let opener: BeneathOpener | undefined; // the directory of the last input stays open for the next
  const beneath = (root: string) => {
    if (opener === undefined || opener.root !== root) {
      opener?.close();
      opener = new BeneathOpener(root);
    }
    return opener;
  };
  try {
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
        const opened = e.root === undefined ? openRegular(file) : beneath(e.root).open(file);
        size = opened.size;
        try {
          await out.write(entryHeader(e.name, size));
          if (size <= SMALL_FILE_BYTES) {
            // one synchronous read, no thread-pool round trips: most source files are small
            scratch ??= Buffer.allocUnsafe(SMALL_FILE_BYTES + 1);
            const data = readSmall(opened, file, size, scratch);
            hash.update(data);
            await out.write(data);
          } else await streamFile(opened, file, size, out, hash);
        } finally {
          closeQuietly(opened.fd);
        }
        // thousands of synchronous reads in a row would hold up timers and pipes (a heartbeat, a session)
        if (size <= SMALL_FILE_BYTES && ++smallSinceYield === YIELD_EVERY) {
          smallSinceYield = 0;
          await new Promise((resolve) => setImmediate(resolve));
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
      if (opts.verified) {
        // many small files go out in batches; a big one as soon as it is checked
        if (out.pending >= RELEASE_BYTES || size > SMALL_FILE_BYTES) await out.release();
        opts.verified(out.total - out.pending, packed.length);
      }
    }
    await out.zeros(2 * BLOCK);
    await out.flush();
    opts.verified?.(out.total, packed.length);
    return packed;
  } finally {
    try {
      opener?.close();
    } catch {
      // read-only: a failed close loses nothing
    }
  }
}
