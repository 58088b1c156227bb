// The worker ⇄ `genjob serve` wire format, the same over a local pipe and over ssh.
// A message is a header line `GJ1 <json>\n` (at most 64 KiB) followed by a body of chunks,
// each `u32be length + bytes`, ended by a zero length. Chunking lets a bundle or a result
// stream in both directions without knowing its size first, and lets one serve process answer
// many requests (one remote session per host for a whole drain, see docs/performance.md).
// Everything read here may come from a hostile host: every length is capped.
import type { Writable } from 'node:stream';

export const PROTOCOL = 'genjob-serve/1';
const MAGIC = Buffer.from('GJ1 ');
export const MAX_HEADER_BYTES = 64 * 1024;
const MAX_CHUNK_BYTES = 16 * 1024 * 1024;
const WRITE_CHUNK_BYTES = 1024 * 1024;
/** Bytes a writer may have queued before chunk() waits: enough to keep the pipe busy while the next chunk is read. */
const MAX_IN_FLIGHT = 4 * 1024 * 1024;

export class ProtocolError extends Error {
  readonly code = 'EGJ_PROTOCOL';
}

/** The sender gave up on a body mid-way (e.g. an input changed while it was packed); the stream stays in sync. */
export class BodyAbortedError extends ProtocolError {}

const ABORT = 0xffffffff;

export type Header = { type: string } & Record<string, unknown>;

/** Reads messages from a byte stream; `maxBodyBytes` caps each body (a hostile host may stream forever). */
export class FrameReader {
  // Unconsumed input as a list of chunks: concatenating on every read would copy
  // megabyte bodies many times over.
  private chunks: Buffer[] = [];
  private buffered = 0;
  private ended = false;
  private readonly it: AsyncIterator<Uint8Array>;
  /** Bytes read so far from the source (for progress and caps). */
  total = 0;

  constructor(
    source: AsyncIterable<Uint8Array>,
    private readonly maxBodyBytes: number,
  ) {
    this.it = source[Symbol.asyncIterator]();
  }

  private async fill(): Promise<boolean> {
    if (this.ended) return false;
    const next = await this.it.next();
    if (next.done) {
      this.ended = true;
      return false;
    }
    const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    this.total += chunk.length;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    return true;
  }

  private async need(n: number): Promise<void> {
    while (this.buffered < n) {
      if (!(await this.fill())) throw new ProtocolError(`stream ended ${n - this.buffered} bytes early`);
    }
  }

  /** The next `n` buffered bytes; copies only when they span source chunks (and then only those). */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    let out: Buffer;
    if (first && first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let at = 0;
      while (at < n) {
        const c = this.chunks[0]!;
        const k = Math.min(c.length, n - at);
        c.copy(out, at, 0, k);
        at += k;
        if (k === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(k);
      }
    }
    this.buffered -= n;
    return out;
  }

  /** Up to `n` bytes from the first buffered chunk, without copying. */
  private takeSome(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length <= n) {
      this.chunks.shift();
      this.buffered -= first.length;
      return first;
    }
    this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return first.subarray(0, n);
  }

  private newlineAt(): number {
    let base = 0;
    for (const c of this.chunks) {
      const i = c.indexOf(0x0a);
      if (i >= 0) return base + i;
      base += c.length;
    }
    return -1;
  }

  /** The next message's header, or null at a clean end of stream. */
  async readHeader(): Promise<Header | null> {
    for (;;) {
      const nl = this.newlineAt();
      if (nl >= 0) {
        const line = this.take(nl + 1);
        if (!line.subarray(0, MAGIC.length).equals(MAGIC)) {
          throw new ProtocolError(
            `not a genjob serve message (starts ${JSON.stringify(line.subarray(0, 16).toString('latin1'))})`,
          );
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(line.subarray(MAGIC.length, nl).toString('utf8'));
        } catch {
          throw new ProtocolError('message header is not JSON');
        }
        if (typeof parsed !== 'object' || parsed === null || typeof (parsed as Header).type !== 'string') {
          throw new ProtocolError('message header has no type');
        }
        return parsed as Header;
      }
      if (this.buffered > MAX_HEADER_BYTES)
        throw new ProtocolError(`message header over ${MAX_HEADER_BYTES} bytes`);
      if (!(await this.fill())) {
        if (this.buffered === 0) return null;
        throw new ProtocolError('stream ended inside a message header');
      }
    }
  }

  /** Read a message body to its end, discarding it (keeps the stream in sync after a refusal). */
  async drain(body: AsyncGenerator<Buffer>): Promise<void> {
    try {
      for await (const _ of body) {
        // discard
      }
    } catch (err) {
      if (!(err instanceof BodyAbortedError)) throw err;
    }
  }

  /**
   * The current message's body, in pieces; must be consumed fully before the next readHeader().
   * Pieces are views of the source's own chunks, not copies (a Node stream never reuses a chunk it
   * emitted), and may be smaller than the frames the sender wrote. `maxBytes` lowers the cap for this body.
   */
  async *body(maxBytes = this.maxBodyBytes): AsyncGenerator<Buffer> {
    const cap = Math.min(maxBytes, this.maxBodyBytes);
    let size = 0;
    for (;;) {
      await this.need(4);
      const len = this.take(4).readUInt32BE(0);
      if (len === 0) return;
      if (len === ABORT) throw new BodyAbortedError('the sender aborted this message body');
      if (len > MAX_CHUNK_BYTES) throw new ProtocolError(`body chunk of ${len} bytes is over the cap`);
      size += len;
      if (size > cap) throw new ProtocolError(`message body over the ${cap}-byte cap`);
      let left = len;
      while (left > 0) {
        if (this.buffered === 0 && !(await this.fill()))
          throw new ProtocolError(`stream ended ${left} bytes early, inside a body chunk`);
        const piece = this.takeSome(left);
        left -= piece.length;
        yield piece;
      }
    }
  }
}

/**
 * Writes messages to a stream, honouring back-pressure. Body chunks are pipelined: chunk() returns
 * once at most MAX_IN_FLIGHT bytes are still queued, so the caller reads and hashes the next chunk
 * while the OS takes the last one; end() and abort() wait until the whole message left. A chunk
 * handed to chunk() must not be modified afterwards (it is written without a copy).
 */
export class FrameWriter {
  /** Writes not yet handed to the OS, oldest first: their size and their completion. */
  private readonly pending: Array<{ bytes: number; done: Promise<void> }> = [];
  private queued = 0;
  private failed: Error | undefined;

  constructor(private readonly out: Writable) {
    // a write error also comes as an 'error' event; without a listener it would crash the process
    out.on('error', (err: Error) => {
      this.failed ??= err;
    });
  }

  /** The write error that broke the stream (its 'error' event or a failed write), if one did. */
  get broken(): Error | undefined {
    return this.failed;
  }

  /** Queue `parts` as one write (cork: the length prefix and its data go out in one writev); its completion. */
  private send(parts: Uint8Array[]): Promise<void> {
    if (this.failed) throw this.failed;
    const bytes = parts.reduce((n, p) => n + p.length, 0);
    const done = new Promise<void>((resolve, reject) => {
      if (parts.length > 1) this.out.cork();
      parts.forEach((p, i) => {
        if (i < parts.length - 1) this.out.write(p);
        else
          this.out.write(p, (err) => {
            if (err) {
              this.failed ??= err;
              reject(err);
            } else resolve();
          });
      });
      if (parts.length > 1) this.out.uncork();
    });
    done.catch(() => {}); // surfaced by the next wait or send
    this.pending.push({ bytes, done });
    this.queued += bytes;
    return done;
  }

  /** Wait for the oldest writes until at most `limit` bytes are queued. */
  private async settle(limit: number): Promise<void> {
    while (this.pending.length > 0 && this.queued > limit) {
      const oldest = this.pending.shift()!;
      this.queued -= oldest.bytes;
      await oldest.done;
    }
    if (this.failed) throw this.failed;
  }

  async header(header: Header): Promise<void> {
    const line = Buffer.from(`GJ1 ${JSON.stringify(header)}\n`);
    if (line.length > MAX_HEADER_BYTES) throw new ProtocolError('message header too large');
    this.send([line]);
    await this.settle(MAX_IN_FLIGHT);
  }

  /**
   * Queue `bytes` as body chunks. `written` is called once the OS has taken all of them (writes finish in
   * order), so the caller may then reuse their memory; never after a failed write.
   */
  async chunk(bytes: Uint8Array, written?: () => void): Promise<void> {
    for (let off = 0; off < bytes.length; off += WRITE_CHUNK_BYTES) {
      const end = Math.min(bytes.length, off + WRITE_CHUNK_BYTES);
      const len = Buffer.allocUnsafe(4);
      len.writeUInt32BE(end - off, 0);
      const done = this.send([len, bytes.subarray(off, end)]);
      if (written !== undefined && end === bytes.length) done.then(written, () => {});
      await this.settle(MAX_IN_FLIGHT);
    }
  }

  async end(): Promise<void> {
    this.send([Buffer.alloc(4)]);
    await this.settle(0);
  }

  /** End the current body as aborted; the reader throws BodyAbortedError and stays in sync. */
  async abort(): Promise<void> {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(ABORT, 0);
    this.send([b]);
    await this.settle(0);
  }

  /** A whole message with an in-memory body. */
  async message(header: Header, body?: Uint8Array): Promise<void> {
    await this.header(header);
    if (body && body.length > 0) await this.chunk(body);
    await this.end();
  }
}

/** A view of `body` whose early exit (break, throw) does not close it, so the rest can still be drained. */
export function unclosable<T>(body: AsyncIterator<T>): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => ({ next: () => body.next() }) };
}
