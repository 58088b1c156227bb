// streamBundle: what is sent is the spool, so an input edited (or swapped) after it was checked never
// shows in the chunks, whether the spool held it in memory or spilled it to its temp file; a mismatch
// leaves no temp file behind; checked inputs go out while later ones are read, never a byte of one
// not yet checked.
import { createHash } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { InputChangedError } from '../../src/transport/archive-errors.js';
import { safeExtract } from '../../src/transport/safe-extract.js';
import { SpoolBudget } from '../../src/worker/bounded-spool.js';
import { type StreamingBundle, streamBundle } from '../../src/worker/spool-bundle.js';
import { chunked } from '../helpers/hostile-tar.js';
import { tempDir, tempRepo } from '../helpers/temp-store.js';

const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');
const BIG = 'b'.repeat(3 * 1024 * 1024 + 11);

function repo() {
  const files = { 'src/a.txt': 'alpha\n', 'data/big.txt': BIG, 'src/deep/c.txt': 'gamma\n' };
  const { root, store } = tempRepo('gj-spool-bundle-', files);
  const job = buildJob(
    'edit them',
    Object.entries(files).map(([path, text]) => ({ path, sha256: sha(text) })),
  );
  return { root, store, job };
}

async function bytesOf(chunks: AsyncGenerator<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of chunks) out.push(c);
  return Buffer.concat(out);
}

const budgets = [
  { title: 'in memory', budget: () => new SpoolBudget(64 * 1024 * 1024), spilled: false },
  { title: 'spilled to its temp file', budget: () => new SpoolBudget(0), spilled: true },
  { title: 'partly spilled', budget: () => new SpoolBudget(1024 * 1024), spilled: true },
];

/** The bundle once every input matched (what a sender holds when nothing changed), or packing's error. */
async function whole(bundle: StreamingBundle) {
  try {
    const { bytes } = await bundle.done;
    return { bytes, chunks: () => bundle.stream(), discard: () => bundle.discard() };
  } catch (err) {
    await bundle.discard();
    throw err;
  }
}

describe('streamBundle, read whole', () => {
  it.each(budgets)(
    'sends the bytes it checked, never an edit made after ($title)',
    async ({ budget, spilled }) => {
      const { root, store, job } = repo();
      const bundle = await whole(streamBundle(store, job, budget()));
      // edits after the check: same size, other bytes; and a file grown
      writeFileSync(join(root, 'src/a.txt'), 'ALPHA\n');
      writeFileSync(join(root, 'data/big.txt'), `${BIG}SECRET`);
      const tar = await bytesOf(bundle.chunks());
      expect(tar.length).toBe(bundle.bytes);
      expect(tar.includes('ALPHA')).toBe(false);
      expect(tar.includes('SECRET')).toBe(false);
      expect(readdirSync(store.layout.staging).length).toBe(spilled ? 1 : 0);
      const out = await safeExtract(chunked(tar, 65536), {
        stagingParent: tempDir('gj-spool-out-'),
        prefix: 'files/',
        inMemory: { 'job.json': 1 << 20 },
        allowed: new Set(job.inputs.map((i) => i.path)),
        maxEntries: 10,
        maxFileBytes: 1 << 24,
        maxTotalBytes: 1 << 24,
      });
      expect(out.files.map((f) => [f.path, f.sha256])).toEqual(job.inputs.map((i) => [i.path, i.sha256]));
      await bundle.discard();
      expect(readdirSync(store.layout.staging)).toEqual([]);
    },
  );

  it.each(budgets)(
    'throws InputChangedError for an input edited before it was read, leaving no spool ($title)',
    async ({ budget }) => {
      const { root, store, job } = repo();
      writeFileSync(join(root, 'src/deep/c.txt'), 'GAMMA\n');
      const err = await whole(streamBundle(store, job, budget())).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InputChangedError);
      expect((err as Error).message).toContain('src/deep/c.txt: hashes to');
      expect(readdirSync(store.layout.staging)).toEqual([]);
    },
  );

  it.each(budgets)(
    'sends the same bytes when the sender hands every chunk back once written ($title)',
    async ({ budget }) => {
      const { store, job } = repo();
      const bundle = streamBundle(store, job, budget());
      const sent: Buffer[] = [];
      for await (const c of bundle.stream()) {
        sent.push(Buffer.from(c)); // written out (a copy here), then its memory is the spool's again
        bundle.recycle(c);
      }
      const { bytes } = await bundle.done;
      const again = await whole(streamBundle(store, job, new SpoolBudget(64 * 1024 * 1024)));
      const expected = await bytesOf(again.chunks());
      expect(Buffer.concat(sent).length).toBe(bytes);
      expect(Buffer.concat(sent).equals(expected)).toBe(true);
      await Promise.all([bundle.discard(), again.discard()]);
    },
  );

  it('gives its memory back to the budget when discarded', async () => {
    const { store, job } = repo();
    const budget = new SpoolBudget(64 * 1024 * 1024);
    const bundle = await whole(streamBundle(store, job, budget));
    expect(budget.used).toBe(bundle.bytes);
    await bundle.discard();
    expect(budget.used).toBe(0);
  });
});

describe('streamBundle', () => {
  it.each(budgets)(
    'sends the inputs checked before a changed one and no byte of it, then throws ($title)',
    async ({ budget }) => {
      // the last input is big: its first MiB reaches the spool before its digest is known
      const files = { 'a.txt': 'alpha\n'.repeat(50_000), 'z/big.txt': BIG };
      const { root, store } = tempRepo('gj-stream-bundle-', files);
      const job = buildJob(
        'edit them',
        Object.entries(files).map(([path, text]) => ({ path, sha256: sha(text) })),
      );
      writeFileSync(join(root, 'z/big.txt'), `SECRET${BIG.slice(6)}`); // same size, other bytes
      const bundle = streamBundle(store, job, budget());
      expect(await bundle.started).toBeUndefined(); // a.txt matched (and, 293 KiB, a big file, went on at once)
      const sent: Buffer[] = [];
      const err = await (async () => {
        for await (const c of bundle.stream()) sent.push(c);
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InputChangedError);
      expect((err as Error).message).toContain('z/big.txt: hashes to');
      const all = Buffer.concat(sent);
      // checked bytes leave while later ones are read, from memory or from the spool's file alike
      expect(all.includes('alpha')).toBe(true);
      expect(all.includes('SECRET')).toBe(false);
      expect(all.includes('bbbb')).toBe(false);
      await bundle.discard();
      expect(readdirSync(store.layout.staging)).toEqual([]);
    },
  );

  it('says a bundle whose first input changed failed before anything need be sent', async () => {
    const { root, store, job } = repo();
    writeFileSync(join(root, 'data/big.txt'), `SECRET${BIG.slice(6)}`);
    const bundle = streamBundle(store, job);
    expect(await bundle.started).toBeInstanceOf(InputChangedError);
    await bundle.discard();
  });
});
