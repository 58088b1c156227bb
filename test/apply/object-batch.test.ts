import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ObjectBatch } from '../../src/apply/object-batch.js';
import { ConflictError } from '../../src/core/errors.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { Store } from '../../src/store/store.js';
import { removeTempDirs, tempDir } from './fixture.js';

afterEach(removeTempDirs);

const bytes = Buffer.from('some bytes\n');
const sha = sha256Hex(bytes);

describe('ObjectBatch', () => {
  it('publishes nothing before publish(), then every object at once, and leaves no temp', () => {
    const store = new Store(tempDir()).ensure();
    const batch = new ObjectBatch(store);
    batch.add(sha, bytes);
    batch.add(sha256Hex('other\n'), Buffer.from('other\n'));
    expect(readdirSync(store.layout.dir('objects'))).toEqual([]);
    batch.publish();
    expect(readFileSync(store.layout.object(sha))).toEqual(bytes);
    expect(readdirSync(store.layout.dir('objects'))).toHaveLength(2);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('removes its temps on discard() and publishes nothing', () => {
    const store = new Store(tempDir()).ensure();
    const batch = new ObjectBatch(store);
    batch.add(sha, bytes);
    batch.discard();
    batch.publish();
    expect(readdirSync(store.layout.dir('objects'))).toEqual([]);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it.each([
    { name: 'the same bytes', racer: bytes, fails: false },
    { name: 'other bytes', racer: Buffer.from('not it\n'), fails: true },
  ])('accepts an object another apply published meanwhile only with $name', ({ racer, fails }) => {
    const store = new Store(tempDir()).ensure();
    const batch = new ObjectBatch(store);
    batch.add(sha, bytes);
    writeFileSync(store.layout.object(sha), racer); // a second apply, between our read and our link
    if (fails) {
      const err = (() => {
        try {
          batch.publish();
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(ConflictError);
      expect((err as ConflictError).code).toBe('EGJ_LOCK_LOST');
      // the next apply replaces the bad object
      const again = new ObjectBatch(store);
      again.add(sha, bytes);
      again.publish();
    } else {
      batch.publish();
    }
    expect(readFileSync(store.layout.object(sha))).toEqual(bytes);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });
});
