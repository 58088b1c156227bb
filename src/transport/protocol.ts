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

  private take(n: number): Buffer {
    const first = this.chunks[0];
    let out: Buffer;
    if (first && first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      const all = Buffer.concat(this.chunks, this.buffered);
      out = all.subarray(0, n);
      this.chunks = all.length > n ? [all.subarray(n)] : [];
    }
    this.buffered -= n;
    return out;
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

  /** The current message's body, chunk by chunk; must be consumed fully before the next readHeader(). */
  async *body(): AsyncGenerator<Buffer> {
    let size = 0;
    for (;;) {
      await this.need(4);
      const len = this.take(4).readUInt32BE(0);
      if (len === 0) return;
      if (len === ABORT) throw new BodyAbortedError('the sender aborted this message body');
      if (len > MAX_CHUNK_BYTES) throw new ProtocolError(`body chunk of ${len} bytes is over the cap`);
      size += len;
      if (size > this.maxBodyBytes)
        throw new ProtocolError(`message body over the ${this.maxBodyBytes}-byte cap`);
      await this.need(len);
      // copy: callers may keep the chunk while we keep reading into the shared buffer
      yield Buffer.from(this.take(len));
    }
  }
}

/** Writes messages to a stream, honouring back-pressure. */
export class FrameWriter {
  constructor(private readonly out: Writable) {}

  private write(chunk: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.out.once('error', onError);
      const ok = this.out.write(chunk, (err) => {
        this.out.off('error', onError);
        if (err) reject(err);
        else if (ok) resolve();
      });
      if (!ok) this.out.once('drain', () => resolve());
    });
  }

  async header(header: Header): Promise<void> {
    const line = Buffer.from(`GJ1 ${JSON.stringify(header)}\n`);
    if (line.length > MAX_HEADER_BYTES) throw new ProtocolError('message header too large');
    await this.write(line);
  }

  async chunk(bytes: Uint8Array): Promise<void> {
    for (let off = 0; off < bytes.length; off += WRITE_CHUNK_BYTES) {
      const part = bytes.subarray(off, Math.min(bytes.length, off + WRITE_CHUNK_BYTES));
      const len = Buffer.alloc(4);
      len.writeUInt32BE(part.length, 0);
      await this.write(Buffer.concat([len, part]));
    }
  }

  async end(): Promise<void> {
    await this.write(Buffer.alloc(4));
  }

  /** End the current body as aborted; the reader throws BodyAbortedError and stays in sync. */
  async abort(): Promise<void> {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(ABORT, 0);
    await this.write(b);
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
