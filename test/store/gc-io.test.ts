// gc plans from what it sees: a disk that cannot say whether an item is there (lstat EIO) stops the plan
// with EGJ_IO before anything is pruned or a tombstone written. Taking such an item for absent pruned
// the key without it, and the item stayed in .gen/ unaccounted for ever.
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planGc, sizeOf } from '../../src/store/gc.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';

const KEY = 'd'.repeat(64);

describe('gc on a disk that fails to say what is there', () => {
  it('is EGJ_IO naming the item, not a plan without it', () => {
    const store = tempStore('genjob-gc-');
    const item = join(store.layout.dir('dead'), `${KEY}.job.1-abcdef`);
    writeFileSync(item, '{}');
    writeFileSync(`${item}.why.json`, '{}');
    utimesSync(item, new Date(0), new Date(0));
    expect(planGc(store, 0).keys.map((k) => k.key)).toEqual([KEY]);
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'lstatSync' && args[0] === item) throw sysError('EIO', -5, 'lstat', item);
      return proceed();
    });
    expect(() => planGc(failing, 0)).toThrow(
      expect.objectContaining({ code: 'EGJ_IO', message: expect.stringContaining(`${item}: lstat failed`) }),
    );
  });

  it('sizes a tree as EGJ_IO when one of its files cannot be looked at, and absent files as 0', () => {
    const store = tempStore('genjob-gc-');
    const dir = store.layout.outDir(KEY);
    const file = join(dir, 'a.txt');
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, 'abc');
    expect(sizeOf(store, dir)).toBe(3);
    writeFileSync(join(store.layout.dir('out'), 'x'), '12345');
    expect(sizeOf(store, join(store.layout.dir('out'), 'x'))).toBe(5);
    expect(sizeOf(store, join(store.layout.dir('out'), 'missing'))).toBe(0);
    expect(() => sizeOf(failingOn(store, file), dir)).toThrow(/lstat failed: i\/o error \(EIO\)/);
  });
});

function failingOn(store: ReturnType<typeof tempStore>, file: string) {
  return hookedStore(store, (call, args, proceed) => {
    if (call === 'lstatSync' && args[0] === file) throw sysError('EIO', -5, 'lstat', file);
    return proceed();
  });
}
