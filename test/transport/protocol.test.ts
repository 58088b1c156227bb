import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BodyAbortedError, FrameReader, FrameWriter, ProtocolError } from '../../src/transport/protocol.js';

async function collect(body: AsyncGenerator<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of body) parts.push(c);
  return Buffer.concat(parts);
}

function pipe(maxBody = 1 << 30) {
  const stream = new PassThrough();
  return { writer: new FrameWriter(stream), reader: new FrameReader(stream, maxBody), stream };
}

/** Feed raw bytes in small pieces, the way a pipe may deliver them. */
async function* pieces(bytes: Buffer, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

describe('framed protocol', () => {
  it('carries several messages with multi-megabyte bodies intact', async () => {
    const { writer, reader, stream } = pipe();
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    const done = (async () => {
      await writer.message({ type: 'a', n: 1 }, big);
      await writer.message({ type: 'b' });
      stream.end();
    })();
    const h1 = await reader.readHeader();
    expect(h1).toEqual({ type: 'a', n: 1 });
    expect((await collect(reader.body())).equals(big)).toBe(true);
    expect(await reader.readHeader()).toEqual({ type: 'b' });
    expect((await collect(reader.body())).length).toBe(0);
    expect(await reader.readHeader()).toBeNull();
    await done;
  });

  it('reads the same messages whatever the chunking of the stream', async () => {
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const w = new FrameWriter(out);
    await w.message({ type: 'x', s: 'héllo' }, Buffer.from('payload bytes'));
    await w.message({ type: 'y' }, Buffer.from('more'));
    const all = Buffer.concat(chunks);
    for (const size of [1, 2, 3, 7, 64]) {
      const r = new FrameReader(pieces(all, size), 1024);
      expect(await r.readHeader()).toEqual({ type: 'x', s: 'héllo' });
      expect((await collect(r.body())).toString()).toBe('payload bytes');
      expect(await r.readHeader()).toEqual({ type: 'y' });
      expect((await collect(r.body())).toString()).toBe('more');
      expect(await r.readHeader()).toBeNull();
    }
  });

  it('stays in sync after a body the sender aborted', async () => {
    const { writer, reader, stream } = pipe();
    const done = (async () => {
      await writer.header({ type: 'run' });
      await writer.chunk(Buffer.from('partial'));
      await writer.abort();
      await writer.message({ type: 'next' });
      stream.end();
    })();
    await reader.readHeader();
    await expect(collect(reader.body())).rejects.toBeInstanceOf(BodyAbortedError);
    expect(await reader.readHeader()).toEqual({ type: 'next' });
    await done;
  });

  it.each([
    {
      name: 'garbage instead of a header',
      raw: Buffer.from('HTTP/1.1 200 OK\n'),
      error: /not a genjob serve message/,
    },
    { name: 'a header that is not JSON', raw: Buffer.from('GJ1 {nope\n'), error: /not JSON/ },
    { name: 'a header without a type', raw: Buffer.from('GJ1 {"x":1}\n'), error: /no type/ },
    {
      name: 'a stream that ends inside a header',
      raw: Buffer.from('GJ1 {"type":'),
      error: /inside a message header/,
    },
    {
      name: 'an endless header line',
      raw: Buffer.alloc(70 * 1024, 0x41),
      error: /(over 65536 bytes|not a genjob)/,
    },
  ])('refuses $name', async ({ raw, error }) => {
    const r = new FrameReader(pieces(raw, 4096), 1024);
    await expect(r.readHeader()).rejects.toThrow(error);
  });

  it('refuses a body over its cap and a body cut short', async () => {
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    await new FrameWriter(out).message({ type: 'r' }, Buffer.alloc(5000));
    const all = Buffer.concat(chunks);
    const capped = new FrameReader(pieces(all, 512), 1000);
    await capped.readHeader();
    await expect(collect(capped.body())).rejects.toThrow(/over the 1000-byte cap/);
    const cut = new FrameReader(pieces(all.subarray(0, all.length - 100), 512), 1 << 20);
    await cut.readHeader();
    await expect(collect(cut.body())).rejects.toBeInstanceOf(ProtocolError);
  });

  it('pipelines body chunks but has the whole message written when end() resolves', async () => {
    const written: Buffer[] = [];
    let calls = 0;
    const slow = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _enc, cb) {
        calls++;
        written.push(chunk);
        setTimeout(cb, 2);
      },
      writev(chunks, cb) {
        calls++;
        for (const c of chunks) written.push(c.chunk as Buffer);
        setTimeout(cb, 2);
      },
    });
    const w = new FrameWriter(slow);
    const body = Buffer.alloc(3 * 1024 * 1024 + 5, 1);
    await w.message({ type: 'm' }, body);
    const all = Buffer.concat(written);
    const r = new FrameReader(pieces(all, 65536), 1 << 30);
    expect(await r.readHeader()).toEqual({ type: 'm' });
    expect((await collect(r.body())).equals(body)).toBe(true);
    expect(await r.readHeader()).toBeNull();
    // header, 4 length-prefixed chunks (prefix and data in one writev each), end
    expect(calls).toBeLessThanOrEqual(6);
  });

  it('says a chunk is written only once the stream took the last of its bytes, and never after a failure', async () => {
    // a stream that holds every write until told: what the caller may reuse is what it let go of
    const held: Array<{ bytes: number; cb: (err?: Error | null) => void }> = [];
    const stream = new Writable({
      highWaterMark: 1,
      writev(chunks, cb) {
        held.push({ bytes: chunks.reduce((n, c) => n + (c.chunk as Buffer).length, 0), cb });
      },
    });
    const w = new FrameWriter(stream);
    const events: string[] = [];
    const body = Buffer.alloc(2 * 1024 * 1024 + 3, 2); // two parts on the wire (1 MiB each at most), and 3 bytes
    const sent = w.chunk(body, () => events.push('written'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(held.length).toBe(1); // the first part is with the stream; nothing said yet
    for (let i = 0; held.length > 0 || i < 3; i++) {
      const next = held.shift();
      if (next === undefined) {
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      expect(events).toEqual([]); // not before the last part was taken
      next.cb();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await sent;
    expect(events).toEqual(['written']);

    const failing = new Writable({
      writev(_chunks, cb) {
        cb(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    const f = new FrameWriter(failing);
    let told = false;
    await f
      .chunk(Buffer.alloc(10), () => {
        told = true;
      })
      .catch(() => {});
    await new Promise((resolve) => setImmediate(resolve));
    expect(told).toBe(false);
  });

  it('reports a failed write on the next call instead of crashing the process', async () => {
    const broken = new Writable({
      write(_chunk, _enc, cb) {
        cb(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    const w = new FrameWriter(broken);
    await expect(
      (async () => {
        await w.header({ type: 'x' });
        await w.chunk(Buffer.alloc(10));
        await w.end();
      })(),
    ).rejects.toMatchObject({ code: 'EPIPE' });
  });
});
