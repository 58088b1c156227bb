// removeTree against a swap: a directory of the tree is replaced by a link to a directory outside it
// after its parent was listed and before it is emptied (the moment a process still running in the tree
// would need). node:fs is wrapped so the swap happens exactly then, on the first look at that directory;
// the link is removed as a name and the directory it points at keeps every file.
import * as realFs from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

const swap = vi.hoisted(() => ({ victim: '', aside: '', outside: '', done: false }));

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  /** The first look at the victim directory (by its path, or by a name under a descriptor): swap it first. */
  const before = (path: unknown) => {
    if (swap.done || typeof path !== 'string' || !path.endsWith('/victim')) return;
    swap.done = true;
    fs.renameSync(swap.victim, swap.aside);
    fs.symlinkSync(swap.outside, swap.victim);
  };
  return {
    ...fs,
    openSync: (path: never, ...rest: never[]) => {
      before(path);
      return (fs.openSync as (...a: unknown[]) => number)(path, ...rest);
    },
    readdirSync: (path: never, ...rest: never[]) => {
      before(path);
      return (fs.readdirSync as (...a: unknown[]) => unknown)(path, ...rest);
    },
  };
});

const { removeTree } = await import('../../src/store/remove-tree.js');
const { tempDir } = await import('../helpers/temp-store.js');

describe('removeTree, a directory swapped for a link while the tree is removed', () => {
  it('removes the link, never what it points at', () => {
    const base = tempDir('genjob-rmtree-race-');
    const outside = join(base, 'outside');
    realFs.mkdirSync(join(outside, 'inner'), { recursive: true });
    realFs.writeFileSync(join(outside, 'keep.txt'), 'keep');
    realFs.writeFileSync(join(outside, 'inner', 'deep.txt'), 'deep');
    const tree = join(base, 'tree');
    realFs.mkdirSync(join(tree, 'victim', 'sub'), { recursive: true });
    realFs.writeFileSync(join(tree, 'victim', 'sub', 'f.txt'), 'f');
    realFs.writeFileSync(join(tree, 'a.txt'), 'a');
    Object.assign(swap, { victim: join(tree, 'victim'), aside: join(base, 'moved'), outside, done: false });

    let thrown: unknown;
    try {
      removeTree(tree);
    } catch (err) {
      thrown = err;
    }
    expect(swap.done).toBe(true); // the swap happened mid-removal
    expect(realFs.readdirSync(outside, { recursive: true }).sort()).toEqual([
      'inner',
      'inner/deep.txt',
      'keep.txt',
    ]);
    expect(realFs.readFileSync(join(outside, 'keep.txt'), 'utf8')).toBe('keep');
    expect(thrown).toBeUndefined();
    expect(realFs.existsSync(tree)).toBe(false);
  });
});
