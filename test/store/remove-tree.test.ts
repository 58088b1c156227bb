// removeTree: a tree the checked code wrote into is removed as names, never through a link: links to
// directories and files outside stay untouched (the tree's own and the top path's), FIFOs and sockets
// go, a missing path is fine, and an entry gone meanwhile is fine. A failure names the entry by its path.
// Directories the checked code took its owner's bits from (`chmod 000 d`) go too: that is tested as an
// unprivileged user (root's permission checks never refuse), removeTree bundled and run under setpriv.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
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

  // only root can become another user here
  const asNobody = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;
  it.skipIf(!asNobody)(
    'hostile: directories their owner may not read, enter or change (000, 100, 400, 500) are removed by that owner, through no link',
    () => {
      const base = tempDir('genjob-rmtree-nobody-');
      const out = outside(base);
      const before = listing(out.dir);
      const tree = join(base, 'tree');
      const modes = { m000: 0o000, m100: 0o100, m400: 0o400, m500: 0o500 };
      for (const name of Object.keys(modes)) {
        mkdirSync(join(tree, name, 'e', 'deeper'), { recursive: true });
        writeFileSync(join(tree, name, 'e', 'f.txt'), 'x');
        symlinkSync(out.dir, join(tree, name, 'to-dir'));
      }
      // a locked directory inside a locked one
      mkdirSync(join(tree, 'm000', 'e', 'locked'));
      // removeTree as its own bundle, run as nobody, who then owns the tree (as a checker's run does)
      const bundle = join(base, 'remove-tree.mjs');
      buildSync({
        entryPoints: [resolve(import.meta.dirname, '../../src/store/remove-tree.ts')],
        outfile: bundle,
        bundle: true,
        format: 'esm',
        platform: 'node',
        logLevel: 'silent',
      });
      const own = (p: string) => {
        chownSync(p, 65534, 65534);
        if (lstatSync(p).isDirectory()) for (const n of readdirSync(p)) own(join(p, n));
      };
      chownSync(base, 65534, 65534);
      own(tree);
      own(out.dir); // nobody's too: a chmod or unlink that followed a link would succeed there
      chownSync(bundle, 65534, 65534);
      chmodSync(join(tree, 'm000', 'e', 'locked'), 0);
      for (const [name, mode] of Object.entries(modes)) chmodSync(join(tree, name), mode);
      const r = spawnSync(
        'setpriv',
        [
          '--reuid=65534',
          '--regid=65534',
          '--clear-groups',
          process.execPath,
          '--input-type=module',
          '-e',
          `const { removeTree } = await import(${JSON.stringify(bundle)}); removeTree(${JSON.stringify(tree)});`,
        ],
        { encoding: 'utf8' },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(existsSync(tree)).toBe(false);
      expect(listing(out.dir)).toEqual(before);
      expect(lstatSync(out.dir).mode & 0o777).toBe(0o755);
    },
  );
});
