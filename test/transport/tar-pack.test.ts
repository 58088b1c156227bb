import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Header, Parser } from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IoError, UsageError } from '../../src/core/errors.js';
import { InputChangedError, InputNotRegularError } from '../../src/transport/archive-errors.js';
import { safeExtract } from '../../src/transport/safe-extract.js';
import { bundleSha256, type PackEntry, packTar } from '../../src/transport/tar-pack.js';
import { chunked } from '../helpers/hostile-tar.js';

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'gj-pack-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const sha = (b: string | Uint8Array) => createHash('sha256').update(b).digest('hex');

async function pack(entries: readonly PackEntry[], onChunk?: (chunk: Buffer, index: number) => void) {
  const chunks: Buffer[] = [];
  const files = await packTar(entries, async (c) => {
    onChunk?.(c, chunks.length);
    chunks.push(c);
  });
  return { files, chunks, tar: Buffer.concat(chunks) };
}

function write(rel: string, data: string | Buffer): string {
  const p = join(root, rel);
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, data);
  return p;
}

/** Entries as node-tar's own parser reads them: name, type, size, mode, uid, mtime. */
async function listWithNodeTar(tar: Buffer) {
  const seen: Array<{
    path: string;
    type: string;
    size: number;
    mode?: number;
    uid?: number;
    mtime?: number;
  }> = [];
  await new Promise<void>((resolve, reject) => {
    const p = new Parser({ strict: true });
    p.on('entry', (e) => {
      seen.push({
        path: e.path,
        type: e.type,
        size: e.size,
        mode: e.mode,
        uid: e.uid,
        mtime: e.mtime?.getTime(),
      });
      e.resume();
    });
    p.on('error', reject);
    p.on('end', () => resolve());
    p.end(tar);
  });
  return seen;
}

describe('packTar', () => {
  const big = Buffer.alloc(3 * 1024 * 1024 + 17, 0x5a);
  const names: Array<{ title: string; name: string }> = [
    { title: 'a short name', name: 'files/a.txt' },
    { title: 'a name over 100 bytes', name: `files/${'long-dir/'.repeat(14)}file.txt` },
    { title: 'a unicode name', name: 'files/ünïcödé/日本語.txt' },
    { title: 'a long unicode name', name: `files/${'é'.repeat(120)}/${'日本'.repeat(30)}.txt` },
  ];

  it.each(names)('round-trips $title through safeExtract with equal bytes and sha256', async ({ name }) => {
    const content = `content of ${name}\n`;
    const file = write('src/input', content);
    const { files, tar } = await pack([
      { name: 'job.json', bytes: Buffer.from('{"k":1}') },
      { name, file, expectSha256: sha(content) },
    ]);
    expect(files).toEqual([
      { name: 'job.json', sha256: sha('{"k":1}'), bytes: 7 },
      { name, sha256: sha(content), bytes: Buffer.byteLength(content) },
    ]);
    const rel = name.slice('files/'.length);
    const staging = join(root, 'staging');
    mkdirSync(staging);
    const out = await safeExtract(chunked(tar, 777), {
      stagingParent: staging,
      prefix: 'files/',
      inMemory: { 'job.json': 1024 },
      allowed: new Set([rel]),
      maxEntries: 10,
      maxFileBytes: 1 << 20,
      maxTotalBytes: 1 << 20,
    });
    expect(out.inMemory.get('job.json')?.toString()).toBe('{"k":1}');
    expect(out.files).toEqual([{ path: rel, sha256: sha(content), bytes: Buffer.byteLength(content) }]);
    expect(readFileSync(join(out.dir, rel), 'utf8')).toBe(content);
    expect((await listWithNodeTar(tar)).map((e) => e.path)).toEqual(['job.json', name]);
  });

  it('writes regular files with mode 0644, uid/gid 0, empty owner names and mtime 0', async () => {
    const { tar } = await pack([{ name: 'files/a.txt', bytes: Buffer.from('a') }]);
    const h = new Header(tar.subarray(0, 512));
    expect({ type: h.type, mode: h.mode, uid: h.uid, gid: h.gid, uname: h.uname, gname: h.gname }).toEqual({
      type: 'File',
      mode: 0o644,
      uid: 0,
      gid: 0,
      uname: '',
      gname: '',
    });
    expect(h.mtime?.getTime()).toBe(0);
    expect(tar.length).toBe(512 + 512 + 1024);
    expect(tar.subarray(1024).every((b) => b === 0)).toBe(true);
  });

  it('produces identical bytes for identical entries', async () => {
    const file = write('f.bin', big);
    const entries = [
      { name: 'files/x.bin', file },
      { name: 'files/日本.txt', bytes: Buffer.from('y') },
    ];
    const a = await pack(entries);
    const b = await pack(entries);
    expect(sha(a.tar)).toBe(sha(b.tar));
  });

  it('streams a large file in 1 MiB chunks and GNU tar reads it back', async () => {
    const file = write('f.bin', big);
    const { files, chunks, tar } = await pack([{ name: 'files/x.bin', file, expectSha256: sha(big) }]);
    expect(files).toEqual([{ name: 'files/x.bin', sha256: sha(big), bytes: big.length }]);
    expect(chunks.slice(0, -1).every((c) => c.length === 1024 * 1024)).toBe(true);
    const out = join(root, 'gnu');
    mkdirSync(out);
    const r = spawnSync('tar', ['-xf', '-', '-C', out], { input: tar });
    expect(r.status).toBe(0);
    expect(sha(readFileSync(join(out, 'files/x.bin')))).toBe(sha(big));
  });

  it('throws InputChangedError when a file does not hash to expectSha256', async () => {
    const file = write('f.txt', 'actual bytes');
    const err = await pack([{ name: 'files/f.txt', file, expectSha256: sha('recorded bytes') }]).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(InputChangedError);
    expect(err.code).toBe('EGJ_INPUT_CHANGED');
    expect(err.exitCode).toBe(4);
    expect(err.message).toContain(file);
  });

  it('vouches (verified) only for bytes already handed on that belong to matched entries', async () => {
    const small = write('a.txt', 'a'.repeat(300_000));
    const file = write('f.bin', big);
    const events: string[] = [];
    let handed = 0;
    const err = await packTar(
      [
        { name: 'files/a.txt', file: small, expectSha256: sha('a'.repeat(300_000)) },
        { name: 'files/f.bin', file, expectSha256: sha('recorded bytes') },
      ],
      async (c) => {
        handed += c.length;
        events.push(`sink ${handed}`);
      },
      { verified: (upTo, entries) => events.push(`verified ${upTo} ${entries}`) },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputChangedError);
    // a.txt (header + 300,000 bytes + padding, a big file) went on as soon as it matched; the chunk that
    // holds the start of f.bin reached the sink too, but nothing vouches for it
    const aEnd = 512 + 300_000 + (512 - (300_000 % 512));
    expect(events[0]).toBe(`sink ${aEnd}`);
    expect(events[1]).toBe(`verified ${aEnd} 1`);
    expect(events.slice(2).every((e) => e.startsWith('sink '))).toBe(true);
    expect(handed).toBeGreaterThan(aEnd);
  });

  it('vouches for the whole stream, end blocks included, once every entry matched', async () => {
    const file = write('f.bin', big);
    let handed = 0;
    let last = -1;
    await packTar(
      [{ name: 'files/f.bin', file, expectSha256: sha(big) }],
      async (c) => {
        handed += c.length;
      },
      { verified: (upTo) => (last = upTo) },
    );
    expect(last).toBe(handed);
  });

  it('packs into the same memory again once the sink is done with it, and never into bytes it keeps', async () => {
    const files = [write('a.bin', big), write('b.txt', 'b'.repeat(300_000)), write('c.bin', big)];
    const entries = files.map((file, i) => ({
      name: `files/${i}`,
      file,
      expectSha256: sha(readFileSync(file)),
    }));
    const expected = (await pack(entries)).tar;
    // a sink that writes every chunk out (a copy here) and says so: one buffer serves the whole stream
    const copies: Buffer[] = [];
    const memories = new Set<ArrayBufferLike>();
    await packTar(
      entries,
      async (c) => {
        copies.push(Buffer.from(c));
        memories.add(c.buffer);
        return 'done';
      },
      { verified: () => {}, maxChunkBytes: 4 * 1024 * 1024 },
    );
    expect(Buffer.concat(copies).equals(expected)).toBe(true);
    expect(memories.size).toBe(1);
    // a sink that keeps every other chunk it is handed: what it kept is never written over
    const kept: Array<{ chunk: Buffer; bytes: Buffer }> = [];
    const parts: Buffer[] = [];
    await packTar(
      entries,
      async (c) => {
        parts.push(Buffer.from(c));
        if (parts.length % 2 === 0) return 'done';
        kept.push({ chunk: c, bytes: Buffer.from(c) });
        return undefined;
      },
      { verified: () => {} },
    );
    expect(Buffer.concat(parts).equals(expected)).toBe(true);
    expect(kept.length).toBeGreaterThan(1);
    for (const k of kept) expect(k.chunk.equals(k.bytes)).toBe(true);
  });

  const changes: Array<{ title: string; change: (file: string) => void; rule: string }> = [
    { title: 'grows', change: (f) => appendFileSync(f, 'more'), rule: 'grew while being packed' },
    { title: 'shrinks', change: (f) => truncateSync(f, 1024), rule: 'shrank while being packed' },
  ];
  it.each(changes)(
    'throws InputChangedError when a file $title while it is read',
    async ({ change, rule }) => {
      const file = write('f.bin', big);
      const err = await pack([{ name: 'files/f.bin', file }], (_c, index) => {
        if (index === 0) change(file);
      }).catch((e) => e);
      expect(err).toBeInstanceOf(InputChangedError);
      expect(err.message).toContain(rule);
    },
  );

  // A small file is read in one synchronous call, so nothing can change it mid-read from here; files
  // whose size (from fstat) is not their length stand in for one that changed after it was opened.
  const sizeLies: Array<{ title: string; file: string; rule: string }> = [
    { title: 'grew (a /proc file: size 0, text inside)', file: '/proc/self/status', rule: 'grew' },
    {
      title: 'shrank (a /sys file: size 4096, a few bytes)',
      file: '/sys/devices/system/cpu/online',
      rule: 'shrank',
    },
  ];
  it.each(sizeLies)('throws InputChangedError for a small file that $title', async ({ file, rule }) => {
    const err = await pack([{ name: 'files/f', file }]).catch((e) => e);
    expect(err).toBeInstanceOf(InputChangedError);
    expect(err.message).toContain(`${rule} while being packed`);
  });

  it('packs thousands of small files, each once, in order', async () => {
    const inputs = Array.from({ length: 600 }, (_, i) => {
      const data = `file ${i}\n`.repeat(i % 7);
      return { name: `files/d${i % 9}/f${i}.txt`, file: write(`d${i % 9}/f${i}.txt`, data), data };
    });
    const { files, tar } = await pack(
      inputs.map(({ name, file, data }) => ({ name, file, expectSha256: sha(data) })),
    );
    expect(files.map((f) => f.name)).toEqual(inputs.map((i) => i.name));
    const listed = await listWithNodeTar(tar);
    expect(listed.map((e) => [e.path, e.size])).toEqual(
      inputs.map((i) => [i.name, Buffer.byteLength(i.data)]),
    );
  });

  // a real read that fails: /proc/self/mem reads the process's memory at the file offset, and
  // nothing is mapped at offset 0, so the kernel answers EIO
  it.each([
    { how: 'by its path', entry: { name: 'files/mem', file: '/proc/self/mem' } },
    { how: 'beneath its root', entry: { name: 'files/mem', file: 'mem', root: '/proc/self' } },
  ])('a failed read, of a file opened $how, is EGJ_IO naming its whole path', async ({ entry }) => {
    const err = await pack([entry]).catch((e) => e);
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe('/proc/self/mem: read failed: i/o error (EIO)');
  });

  it('refuses a symlink and a directory as input', async () => {
    const target = write('target.txt', 'secret');
    const link = join(root, 'link');
    symlinkSync(target, link);
    await expect(pack([{ name: 'files/l', file: link }])).rejects.toBeInstanceOf(InputNotRegularError);
    await expect(pack([{ name: 'files/d', file: root }])).rejects.toBeInstanceOf(InputNotRegularError);
  });

  const badEntries: Array<{ title: string; entry: PackEntry }> = [
    { title: 'a .. name', entry: { name: 'files/../x', bytes: Buffer.from('') } },
    { title: 'an absolute name', entry: { name: '/etc/passwd', bytes: Buffer.from('') } },
    { title: 'neither file nor bytes', entry: { name: 'files/a' } },
    { title: 'both file and bytes', entry: { name: 'files/a', file: '/dev/null', bytes: Buffer.from('') } },
  ];
  it.each(badEntries)('refuses $title before writing anything', async ({ entry }) => {
    const chunks: Buffer[] = [];
    const err = await packTar([entry], async (c) => {
      chunks.push(c);
    }).catch((e) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect(err.code).toBe('EGJ_PACK_ENTRY');
    expect(chunks).toEqual([]);
  });

  it('refuses the same name twice', async () => {
    const e = { name: 'files/a', bytes: Buffer.from('') };
    await expect(pack([e, e])).rejects.toThrow('named twice');
  });

  it('names the bundle by its header blocks and per-file digests, so a changed byte changes the name', async () => {
    const a = write('a.txt', 'alpha\n');
    const first = await pack([
      { name: 'job.json', bytes: Buffer.from('{}') },
      { name: 'files/a.txt', file: a },
    ]);
    // recompute from the archive itself: each entry's 512-byte header, then sha256 of its bytes
    const recomputed = createHash('sha256')
      .update(first.tar.subarray(0, 512))
      .update(Buffer.from(sha('{}'), 'hex'))
      .update(first.tar.subarray(1024, 1536))
      .update(Buffer.from(sha('alpha\n'), 'hex'))
      .digest('hex');
    expect(bundleSha256(first.files)).toBe(recomputed);
    write('a.txt', 'alphA\n');
    const second = await pack([
      { name: 'job.json', bytes: Buffer.from('{}') },
      { name: 'files/a.txt', file: a },
    ]);
    expect(second.tar.length).toBe(first.tar.length);
    expect(bundleSha256(second.files)).not.toBe(bundleSha256(first.files));
  });
});
