import { createHash, randomBytes } from 'node:crypto';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashFiles, PARALLEL_MIN_BYTES } from '../../src/store/hash-files.js';
import { tempDir } from '../helpers/temp-store.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('hashFiles', () => {
  it.each([
    { name: 'a small set, in-process', sizes: [0, 10, 4096], threads: 2 },
    {
      name: 'a large set, spread over worker threads',
      sizes: [PARALLEL_MIN_BYTES / 2, 3, PARALLEL_MIN_BYTES / 4, 1 << 20, 7],
      threads: 2,
    },
    { name: 'a large set on one thread', sizes: [PARALLEL_MIN_BYTES, 5], threads: 1 },
  ])('returns each file its own digest, in order, for $name', async ({ sizes, threads }) => {
    const dir = tempDir('gj-hashes-');
    const files = sizes.map((size, i) => {
      const bytes = randomBytes(size);
      const path = join(dir, `f${i}`);
      writeFileSync(path, bytes);
      return { path, expected: { sha256: sha(bytes), bytes: size } };
    });
    expect(
      await hashFiles(
        files.map((f) => f.path),
        threads,
      ),
    ).toEqual(files.map((f) => f.expected));
  });

  it('never hashes through a symlink, in a worker thread either, and names the file (EGJ_IO, ELOOP)', async () => {
    const dir = tempDir('gj-hashes-');
    writeFileSync(join(dir, 'big'), Buffer.alloc(PARALLEL_MIN_BYTES));
    writeFileSync(join(dir, 'target'), 'x');
    symlinkSync(join(dir, 'target'), join(dir, 'link'));
    await expect(hashFiles([join(dir, 'big'), join(dir, 'link')], 2)).rejects.toMatchObject({
      code: 'EGJ_IO',
      errno: 'ELOOP',
      file: join(dir, 'link'),
      op: 'open',
    });
  });
});
