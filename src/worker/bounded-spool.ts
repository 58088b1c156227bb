// A bounded spool: chunks are kept in memory while the process's spool budget lasts, then appended to
// a private temp file (O_EXCL, 0600) created on the first chunk that does not fit; they come back out in
// the order they went in, memory first. On the memory path nothing is copied or written: the chunk
// handed in is the chunk handed out, so a chunk must never be modified once appended. The budget is
// shared by every spool of the process (each slot of a pool spools its own bundle), so the bundle bytes
// a worker holds in memory stay under one cap whatever the number of slots. stream() sends while the
// spool fills, but only bytes its writer committed (checked), so an unchecked byte never leaves early.
import { rmSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { IoError, ioErrorAt } from '../core/errors.js';

/** Bytes of bundles the worker may hold in memory at once; the rest goes through a temp file. */
export const SPOOL_MEMORY_BYTES = 256 * 1024 * 1024;
const READ_CHUNK = 1024 * 1024;
/** Writes to the temp file allowed to run while more chunks come. */
const MAX_WRITES_IN_FLIGHT = 4;

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
  #fileBytes = 0;
  readonly #writing = new Set<Promise<void>>();
  #released = false;
  /** Bytes from the start the writer vouched for (commit); stream() never yields past them before finish. */
  #committed = 0;
  #finished = false;
  #failure: { error: unknown } | undefined;
  #wake: (() => void) | undefined;

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

  /** Keep `chunk` (in memory, or at the end of the temp file once anything has gone there). */
  async append(chunk: Buffer): Promise<void> {
    if (this.#fh === undefined && this.budget.used + chunk.length <= this.budget.bytes) {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      this.budget.used += chunk.length;
      return;
    }
    if (this.#fh === undefined) {
      try {
        this.#fh = await open(this.file, 'wx+', 0o600);
      } catch (err) {
        throw new IoError('create spool file', this.file, err);
      }
    }
    if (this.#writing.size >= MAX_WRITES_IN_FLIGHT) await Promise.race(this.#writing);
    const done: Promise<void> = this.#fh.write(chunk, 0, chunk.length, this.#fileBytes).then(
      () => {
        this.#writing.delete(done);
      },
      (err: unknown) => {
        throw ioErrorAt(this.file, err); // an fd's error names no file
      },
    );
    done.catch(() => {}); // awaited by the next race or by finish(); never unhandled
    this.#writing.add(done);
    this.#fileBytes += chunk.length;
  }

  /** Wait until every chunk is kept; a failed write throws here. Everything appended is then committed. */
  async finish(): Promise<void> {
    await Promise.all(this.#writing);
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
   * Everything appended, in order, while it is being appended: bytes held in memory leave as soon as
   * they are committed; once the spool spilled to its temp file, the rest leaves after finish() (as
   * chunks()). Throws the error given to fail() at the first step after it, whatever was committed.
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
      if (this.#finished) break;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
    yield* this.#fileChunks();
  }

  /** Everything appended, in order. The file part is read into fresh buffers (a reader may still hold the last). */
  async *chunks(): AsyncGenerator<Buffer> {
    yield* this.#held;
    yield* this.#fileChunks();
  }

  async *#fileChunks(): AsyncGenerator<Buffer> {
    const fh = this.#fh;
    for (let at = 0; fh !== undefined && at < this.#fileBytes; ) {
      const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, this.#fileBytes - at));
      const { bytesRead } = await fh.read(buf, 0, buf.length, at).catch((err: unknown) => {
        throw ioErrorAt(this.file, err);
      });
      if (bytesRead === 0) throw new IoError('read', this.file, new Error('spool file shrank'));
      at += bytesRead;
      yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
    }
  }

  /** Give the memory back to the budget and remove the temp file; safe to call more than once. */
  async discard(): Promise<void> {
    if (!this.#released) {
      this.#released = true;
      this.budget.used -= this.#heldBytes;
    }
    this.#held = [];
    await Promise.allSettled(this.#writing);
    const fh = this.#fh;
    this.#fh = undefined;
    if (fh !== undefined) {
      await fh.close().catch(() => {});
      rmSync(this.file, { force: true });
    }
  }
}
