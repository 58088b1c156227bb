// removeTree against what can happen between its looks: a directory of the tree replaced by a link to a
// directory outside it after its parent was listed and before it is emptied (the moment a process still
// running in the tree would need); an entry gone meanwhile; a disk error. node:fs is wrapped so each
// happens exactly then, on the first call that names the path.
import * as realFs from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

/** One thing to do before the first call of `op` on a path ending in `/${name}`. */
interface Fault {
  op: 'openSync' | 'readdirSync' | 'unlinkSync' | 'rmdirSync';
  name: string;
  act: () => void;
  done?: boolean;
}
const faults = vi.hoisted(() => [] as Fault[]);

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const wrap =
    (op: Fault['op']) =>
    (path: never, ...rest: never[]) => {
      for (const f of faults)
        if (!f.done && f.op === op && typeof path === 'string' && String(path).endsWith(`/${f.name}`)) {
          f.done = true;
          f.act();
        }
      return (fs[op] as (...a: unknown[]) => unknown)(path, ...rest);
    };
  return {
    ...fs,
    openSync: wrap('openSync'),
    readdirSync: wrap('readdirSync'),
    unlinkSync: wrap('unlinkSync'),
    rmdirSync: wrap('rmdirSync'),
  };
});

const { removeTree } = await import('../../src/store/remove-tree.js');
const { tempDir } = await import('../helpers/temp-store.js');

/** A directory outside the tree, with files, that a swapped-in link points at. */
function outsideDir(base: string): string {
  const outside = join(base, 'outside');
  realFs.mkdirSync(join(outside, 'inner'), { recursive: true });
  realFs.writeFileSync(join(outside, 'keep.txt'), 'keep');
  realFs.writeFileSync(join(outside, 'inner', 'deep.txt'), 'deep');
  return outside;
}

/** A tree with `dirs` directories of two files each, and a file beside them. */
function tree(base: string, dirs: string[]): string {
  const root = join(base, 'tree');
  for (const d of dirs) {
    realFs.mkdirSync(join(root, d, 'sub'), { recursive: true });
    realFs.writeFileSync(join(root, d, 'sub', 'f.txt'), 'f');
    realFs.writeFileSync(join(root, d, 'g.txt'), 'g');
  }
  realFs.writeFileSync(join(root, 'a.txt'), 'a');
  return root;
}

function attempt(path: string): unknown {
  try {
    removeTree(path);
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('removeTree, while the tree changes under it', () => {
  it('a directory swapped for a link after its listing: the link goes, never what it points at', () => {
    const base = tempDir('genjob-rmtree-race-');
    const outside = outsideDir(base);
    const root = tree(base, ['victim']);
    const victim = join(root, 'victim');
    faults.splice(0, faults.length, {
      op: 'openSync',
      name: 'victim',
      act: () => {
        realFs.renameSync(victim, join(base, 'moved'));
        realFs.symlinkSync(outside, victim);
      },
    });
    // the code before this file's fix listed the directory by path: the same swap, at that call
    faults.push({ ...faults[0]!, op: 'readdirSync' });
    const err = attempt(root);
    expect(faults.some((f) => f.done)).toBe(true); // the swap happened mid-removal
    expect(realFs.readdirSync(outside, { recursive: true }).sort()).toEqual([
      'inner',
      'inner/deep.txt',
      'keep.txt',
    ]);
    expect(err).toBeUndefined();
    expect(realFs.existsSync(root)).toBe(false);
  });

  it('an entry gone after its listing (a file, a directory) is fine; the rest still goes', () => {
    const base = tempDir('genjob-rmtree-race-');
    const root = tree(base, ['d1', 'gone-dir']);
    faults.splice(
      0,
      faults.length,
      { op: 'unlinkSync', name: 'a.txt', act: () => realFs.rmSync(join(root, 'a.txt')) },
      {
        op: 'openSync',
        name: 'gone-dir',
        act: () => realFs.rmSync(join(root, 'gone-dir'), { recursive: true }),
      },
      // emptied, then removed by someone else before its own rmdir
      { op: 'rmdirSync', name: 'sub', act: () => realFs.rmdirSync(join(root, 'd1', 'sub')) },
    );
    expect(attempt(root)).toBeUndefined();
    expect(faults.every((f) => f.done)).toBe(true);
    expect(realFs.existsSync(root)).toBe(false);
    // the top path itself gone between its lstat and its unlink
    const file = join(base, 'file');
    realFs.writeFileSync(file, 'x');
    faults.splice(0, faults.length, { op: 'unlinkSync', name: 'file', act: () => realFs.rmSync(file) });
    expect(attempt(file)).toBeUndefined();
  });

  it('a disk error is thrown, not taken for a name already gone', () => {
    const base = tempDir('genjob-rmtree-race-');
    const root = tree(base, ['d1']);
    const eio = Object.assign(new Error('EIO: i/o error, unlink'), { code: 'EIO', errno: -5 });
    /** The unlink of `name` fails with EIO. */
    const failing = (name: string): Fault => ({
      op: 'unlinkSync',
      name,
      act: () => {
        throw eio;
      },
    });
    faults.splice(0, faults.length, failing('g.txt'));
    expect(attempt(root)).toBe(eio);
    // the top path a file: the same
    const file = join(base, 'file');
    realFs.writeFileSync(file, 'x');
    faults.splice(0, faults.length, failing('file'));
    expect(attempt(file)).toBe(eio);
    // a directory someone writes into after it was emptied: its rmdir fails, and says so
    const again = tree(join(base, 'again'), ['d1']);
    faults.splice(0, faults.length, {
      op: 'rmdirSync',
      name: 'sub',
      act: () => realFs.writeFileSync(join(again, 'd1', 'sub', 'late.txt'), 'late'),
    });
    // as EGJ_IO naming the directory by its path (not by its descriptor's /proc name)
    expect(attempt(again)).toMatchObject({
      code: 'EGJ_IO',
      errno: 'ENOTEMPTY',
      message: expect.stringMatching(new RegExp(`^${join(again, 'd1', 'sub')}: rmdir failed: `)),
    });
  });

  it('closes every directory it opened', () => {
    const base = tempDir('genjob-rmtree-race-');
    const root = tree(
      base,
      Array.from({ length: 40 }, (_, i) => `d${i}`),
    );
    faults.splice(0, faults.length);
    const open = () => realFs.readdirSync('/proc/self/fd').length;
    const before = open();
    expect(attempt(root)).toBeUndefined();
    expect(realFs.existsSync(root)).toBe(false);
    expect(open()).toBe(before);
  });
});
