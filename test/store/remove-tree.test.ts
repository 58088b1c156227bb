// removeTree: a tree the checked code wrote into is removed as names, never through a link: links to
// directories and files outside stay untouched (the tree's own and the top path's), FIFOs and sockets
// go, a missing path is fine, and an entry gone meanwhile is fine. A failure names the entry by its path.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { removeTree } from '../../src/store/remove-tree.js';
import { tempDir } from '../helpers/temp-store.js';

/** A directory outside the tree, with a file, that links in the tree point at. */
function outside(base: string): { dir: string; file: string } {
  const dir = join(base, 'outside');
  mkdirSync(join(dir, 'inner'), { recursive: true });
  writeFileSync(join(dir, 'keep.txt'), 'keep');
  writeFileSync(join(dir, 'inner', 'deep.txt'), 'deep');
  return { dir, file: join(dir, 'keep.txt') };
}

function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

describe('removeTree', () => {
  it('removes a hostile tree (links escaping to outside directories and files, a FIFO, a socket) and nothing a link points at', () => {
    const base = tempDir('genjob-rmtree-');
    const out = outside(base);
    const before = listing(out.dir);
    const tree = join(base, 'tree');
    for (let d = 0; d < 3; d++)
      for (let f = 0; f < 50; f++) {
        mkdirSync(join(tree, `d${d}`, 'sub', 'empty'), { recursive: true });
        writeFileSync(join(tree, `d${d}`, 'sub', `f${f}.txt`), `${d}/${f}`);
      }
    symlinkSync(out.dir, join(tree, 'd0', 'to-dir'));
    symlinkSync(out.file, join(tree, 'd1', 'to-file'));
    symlinkSync(join(base, 'nowhere'), join(tree, 'dangling'));
    execFileSync('mkfifo', [join(tree, 'd2', 'fifo')]);
    // a bound socket's name stays after its process ends (Node's server would unlink it on close)
    execFileSync('python3', [
      '-c',
      'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])',
      join(tree, 'sock'),
    ]);
    expect(lstatSync(join(tree, 'sock')).isSocket()).toBe(true);

    removeTree(tree);
    expect(existsSync(tree)).toBe(false);
    expect(listing(out.dir)).toEqual(before);
    expect(readFileSync(out.file, 'utf8')).toBe('keep');
    expect(readFileSync(join(out.dir, 'inner', 'deep.txt'), 'utf8')).toBe('deep');
  });

  it('removes a link swapped in for the top path, never the directory it escapes to', () => {
    const base = tempDir('genjob-rmtree-');
    const out = outside(base);
    const link = join(base, 'link');
    symlinkSync(out.dir, link);
    removeTree(link);
    expect(existsSync(link)).toBe(false);
    expect(readFileSync(out.file, 'utf8')).toBe('keep');
    expect(listing(out.dir)).toEqual(['inner', 'inner/deep.txt', 'keep.txt']);
  });

  it('removes a plain file, and is fine with a path that is not there', () => {
    const base = tempDir('genjob-rmtree-');
    writeFileSync(join(base, 'file'), 'x');
    removeTree(join(base, 'file'));
    expect(existsSync(join(base, 'file'))).toBe(false);
    expect(() => removeTree(join(base, 'missing', 'deeper'))).not.toThrow();
  });

  // an immutable file (chattr +i: root on ext4, as CI is) cannot be unlinked, EPERM: a real failure
  const immutable = (file: string, on: boolean) =>
    execFileSync('chattr', [on ? '+i' : '-i', file], { stdio: 'pipe' });
  let canChattr = false;
  try {
    const probe = join(tempDir('genjob-rmtree-chattr-'), 'p');
    writeFileSync(probe, '');
    immutable(probe, true);
    immutable(probe, false);
    canChattr = true;
  } catch {
    // not root, or a filesystem without the attribute
  }
  it.skipIf(!canChattr)('names a file it cannot remove by its path, not by its directory descriptor', () => {
    const tree = join(tempDir('genjob-rmtree-'), 'tree');
    const file = join(tree, 'sub', 'stuck.txt');
    mkdirSync(join(tree, 'sub'), { recursive: true });
    writeFileSync(file, 'x');
    immutable(file, true);
    try {
      let thrown: unknown;
      try {
        removeTree(tree);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(IoError);
      expect((thrown as IoError).message).toBe(`${file}: unlink failed: operation not permitted (EPERM)`);
    } finally {
      immutable(file, false);
    }
  });
});
