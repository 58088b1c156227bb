// A bounded spool: chunks are kept in memory while the process's spool budget lasts, then appended to
// a private temp file (O_EXCL, 0600) created on the first chunk that does not fit; they come back out in
// the order they went in, memory first. On the memory path nothing is copied or written: the chunk
// handed in is the chunk handed out, so a chunk must never be modified once appended. A chunk that went
// to the file is written before append() returns, which then says 'done': its memory may be filled again.
// The budget is shared by every spool of the process (each slot of a pool spools its own bundle), so the
// bundle bytes a worker holds in memory stay under one cap whatever the number of slots. stream() sends
// while the spool fills, but only bytes its writer committed (checked), so an unchecked byte never leaves
// early; bytes in the file leave as soon as they are written and committed, read back into buffers the
// sender hands back (recycle) once it wrote them out.
// The budget is small on purpose: fresh memory costs a page fault per 4 KiB page on first touch (~10 us
// each on the virtual machines measured), while the page cache takes a file's pages at a tenth of that,
// so a big bundle is cheaper to hold in its temp file (whose pages a deleted file never writes to disk).
import { rmSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { IoError, ioErrorAt } from '../core/errors.js';

/** Bytes of bundles the worker may hold in memory at once; the rest goes through a temp file. */
export const SPOOL_MEMORY_BYTES = 4 * 1024 * 1024;
const READ_CHUNK = 1024 * 1024;

/** Memory a set of spools may hold together. */
export class SpoolBudget {
  used = 0;
  constructor(readonly bytes: number) {}
}

/** The budget every spool of this process shares unless told otherwise. */
export const processSpoolBudget = new SpoolBudget(SPOOL_MEMORY_BYTES);

export class BoundedSpool {
  #held: Buffer[] = [];
  #heldBytes = 0;
  #fh: FileHandle | undefined;
  /** Bytes appended to the file, and of them those whose write finished (what a reader may read back). */
  #fileBytes = 0;
  #fileWritten = 0;
  /** The write in flight (one at a time: append() returns once its chunk is written). */
  #writing: Promise<void> | undefined;
  #released = false;
  /** Bytes from the start the writer vouched for (commit); stream() never yields past them before finish. */
  #committed = 0;
  #finished = false;
  #failure: { error: unknown } | undefined;
  #wake: (() => void) | undefined;
  /**
   * Read-back buffers the sender handed back, and the buffer behind each view stream() lent out (weakly:
   * a view the sender drops without handing it back takes its buffer to the collector with it).
   */
  readonly #free: Buffer[] = [];
  #lent = new WeakMap<Buffer, Buffer>();

  /** `file` is created only if the budget runs out; it must not exist. */
  constructor(
    private readonly file: string,
    private readonly budget: SpoolBudget = processSpoolBudget,
  ) {}

  get bytes(): number {
    return this.#heldBytes + this.#fileBytes;
  }

  /** Bytes that went to the temp file (0 when the whole spool fit in memory). */
  get spilled(): number {
    return this.#fileBytes;
  }

  /**
   * Keep `chunk` (in memory, or at the end of the temp file once anything has gone there). 'done' when it
   * went to the file and is written: the caller may then reuse its memory; otherwise it is kept as it is.
   */
  async append(chunk: Buffer): Promise<'done' | undefined> {
    if (this.#fh === undefined && this.budget.used + chunk.length <= this.budget.bytes) {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      this.budget.used += chunk.length;
      return undefined;
    }
    if (this.#fh === undefined) {
      try {
        this.#fh = await open(this.file, 'wx+', 0o600);
      } catch (err) {
        throw new IoError('create spool file', this.file, err);
      }
    }
    const at = this.#fileBytes;
    this.#fileBytes += chunk.length;
    const written = this.#write(this.#fh, chunk, at);
    this.#writing = written;
    await written;
    this.#fileWritten = this.#fileBytes;
    this.#notify();
    return 'done';
  }

  /** Write all of `chunk` at `at` (a write may take less than asked). */
  async #write(fh: FileHandle, chunk: Buffer, at: number): Promise<void> {
    try {
      for (let done = 0; done < chunk.length; ) {
        const { bytesWritten } = await fh.write(chunk, done, chunk.length - done, at + done);
        done += bytesWritten;
      }
    } catch (err) {
      throw ioErrorAt(this.file, err); // an fd's error names no file
    }
  }

  /** Wait until every chunk is kept; a failed write throws here. Everything appended is then committed. */
  async finish(): Promise<void> {
    await this.#writing;
    this.#finished = true;
    this.#notify();
  }

  /** The first `upTo` bytes appended may leave now (stream()); they must all have been appended. */
  commit(upTo: number): void {
    this.#committed = Math.max(this.#committed, upTo);
    this.#notify();
  }

  /** The writer gave up: a stream() running throws `error` instead of yielding anything more. */
  fail(error: unknown): void {
    this.#failure ??= { error };
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /**
   * Everything appended, in order, while it is being appended: bytes leave as soon as they are committed
   * (and, in the file, written). Throws the error given to fail() at the first step after it, whatever
   * was committed. A chunk read back from the file is lent: hand it to recycle() once it is written out,
   * and its memory is read into again (one never handed back is simply left to the collector).
   */
  async *stream(): AsyncGenerator<Buffer> {
    let i = 0; // the held chunk being sent
    let off = 0; // bytes of it sent
    let pos = 0; // bytes sent in all
    for (;;) {
      if (this.#failure) throw this.#failure.error;
      const limit = this.#finished ? Number.POSITIVE_INFINITY : this.#committed;
      const held = this.#held[i];
      if (held !== undefined && pos < limit) {
        const n = Math.min(held.length - off, limit - pos);
        const part = held.subarray(off, off + n);
        off += n;
        pos += n;
        if (off === held.length) {
          i += 1;
          off = 0;
        }
        yield part;
        continue;
      }
      // the held chunks are all sent (the file only ever follows them): read back what is written
      const at = pos - this.#heldBytes;
      const readable = Math.min(this.#fileWritten, limit - this.#heldBytes);
      if (held === undefined && this.#fh !== undefined && at < readable) {
        const part = await this.#readBack(this.#fh, at, Math.min(READ_CHUNK, readable - at));
        pos += part.length;
        yield part;
        continue;
      }
      if (this.#finished && held === undefined && at >= this.#fileBytes) break;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  /** Up to `length` bytes of the file from `at`, read into `buf`: the part of it they fill. */
  async #readAt(fh: FileHandle, buf: Buffer, at: number, length: number): Promise<Buffer> {
    const { bytesRead } = await fh.read(buf, 0, length, at).catch((err: unknown) => {
      throw ioErrorAt(this.file, err);
    });
    if (bytesRead === 0) throw new IoError('read', this.file, new Error('spool file shrank'));
    return bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
  }

  /** `length` bytes of the file from `at`, into a buffer handed back by the sender when there is one. */
  async #readBack(fh: FileHandle, at: number, length: number): Promise<Buffer> {
    const buf = this.#free.pop() ?? Buffer.allocUnsafe(READ_CHUNK);
    const part = await this.#readAt(fh, buf, at, length);
    this.#lent.set(part, buf);
    return part;
  }

  /** A chunk stream() lent is written out: its memory is read into again. Any other buffer is ignored. */
  recycle(chunk: Buffer): void {
    const buf = this.#lent.get(chunk);
    if (buf === undefined) return;
    this.#lent.delete(chunk);
    this.#free.push(buf);
  }

  /** Everything appended, in order. The file part is read into fresh buffers (a reader may still hold the last). */
  async *chunks(): AsyncGenerator<Buffer> {
    yield* this.#held;
    const fh = this.#fh;
    for (let at = 0; fh !== undefined && at < this.#fileBytes; ) {
      const length = Math.min(READ_CHUNK, this.#fileBytes - at);
      const part = await this.#readAt(fh, Buffer.allocUnsafe(length), at, length);
      at += part.length;
      yield part;
    }
  }

  /** Give the memory back to the budget and remove the temp file; safe to call more than once. */
  async discard(): Promise<void> {
    if (!this.#released) {
      this.#released = true;
      this.budget.used -= this.#heldBytes;
    }
    this.#held = [];
    this.#free.length = 0;
    this.#lent = new WeakMap();
    await this.#writing?.catch(() => {});
    const fh = this.#fh;
    this.#fh = undefined;
    if (fh !== undefined) {
      await fh.close().catch(() => {});
      rmSync(this.file, { force: true });
    }
  }
}
