import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashFile, hashSmallFileSync, SMALL_FILE_BYTES } from '../../src/store/hash-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gj-hash-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('file hashing', () => {
  it.each([
    { size: 0 },
    { size: 1 },
    { size: 64 * 1024 },
    { size: 64 * 1024 + 1 },
    { size: SMALL_FILE_BYTES },
    { size: SMALL_FILE_BYTES + 1 },
    { size: 3 * 1024 * 1024 + 7 },
  ])(
    'gives the sha256 of the bytes for $size bytes, streamed or read at once, and shows every byte to onChunk',
    async ({ size }) => {
      const bytes = randomBytes(size);
      const file = join(dir, 'f');
      writeFileSync(file, bytes);
      const expected = createHash('sha256').update(bytes).digest('hex');
      const seen: Buffer[] = [];
      expect(await hashFile(file, (c) => seen.push(Buffer.from(c)))).toEqual({
        sha256: expected,
        bytes: size,
      });
      expect(Buffer.concat(seen).equals(bytes)).toBe(true);
      const seenSync: Buffer[] = [];
      expect(hashSmallFileSync(file, (c) => seenSync.push(Buffer.from(c)))).toEqual({
        sha256: expected,
        bytes: size,
      });
      expect(Buffer.concat(seenSync).equals(bytes)).toBe(true);
    },
  );

  it('never hashes through a symlink', async () => {
    writeFileSync(join(dir, 'target'), 'x');
    symlinkSync(join(dir, 'target'), join(dir, 'link'));
    await expect(hashFile(join(dir, 'link'))).rejects.toMatchObject({ code: 'ELOOP' });
    expect(() => hashSmallFileSync(join(dir, 'link'))).toThrow(expect.objectContaining({ code: 'ELOOP' }));
  });
});
