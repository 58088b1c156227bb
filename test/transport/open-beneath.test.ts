import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BeneathOpener, openBeneath } from '../../src/transport/open-beneath.js';

let dir: string;
let root: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gj-beneath-'));
  root = join(dir, 'repo');
  mkdirSync(join(root, 'a/b'), { recursive: true });
  writeFileSync(join(root, 'a/b/f.txt'), 'inside\n');
  mkdirSync(join(dir, 'outside/b'), { recursive: true });
  writeFileSync(join(dir, 'outside/b/f.txt'), 'outside\n');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('openBeneath', () => {
  it('opens a regular file under the root', () => {
    const { fd, size } = openBeneath(root, 'a/b/f.txt');
    try {
      expect(size).toBe(7);
      expect(readFileSync(fd, 'utf8')).toBe('inside\n');
    } finally {
      closeSync(fd);
    }
  });

  it.each([
    {
      name: 'a parent directory swapped for a symlink',
      swap: () => {
        rmSync(join(root, 'a'), { recursive: true });
        symlinkSync(join(dir, 'outside'), join(root, 'a'));
      },
      code: 'EGJ_INPUT_CHANGED',
      rule: /a \(on the way to it\) is now a symlink/,
    },
    {
      name: 'a deeper parent swapped for a symlink',
      swap: () => {
        rmSync(join(root, 'a/b'), { recursive: true });
        symlinkSync(join(dir, 'outside/b'), join(root, 'a/b'));
      },
      code: 'EGJ_INPUT_CHANGED',
      rule: /b \(on the way to it\) is now a symlink/,
    },
    {
      name: 'the file swapped for a symlink',
      swap: () => {
        rmSync(join(root, 'a/b/f.txt'));
        symlinkSync(join(dir, 'outside/b/f.txt'), join(root, 'a/b/f.txt'));
      },
      code: 'EGJ_INPUT_NOT_REGULAR',
      rule: /a symbolic link/,
    },
    {
      name: 'the file swapped for a directory',
      swap: () => {
        rmSync(join(root, 'a/b/f.txt'));
        mkdirSync(join(root, 'a/b/f.txt'));
      },
      code: 'EGJ_INPUT_NOT_REGULAR',
      rule: /a directory/,
    },
  ])('refuses $name, never reading outside', ({ swap, code, rule }) => {
    swap();
    let err: unknown;
    try {
      closeSync(openBeneath(root, 'a/b/f.txt').fd);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code });
    expect((err as Error).message).toMatch(rule);
  });
});

describe('BeneathOpener', () => {
  const read = (opener: BeneathOpener, rel: string) => {
    const { fd } = opener.open(rel);
    try {
      return readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  };

  it('keeps the directory it reached without a link: a parent swapped for a symlink since is not followed', () => {
    writeFileSync(join(root, 'a/b/g.txt'), 'inside too\n');
    writeFileSync(join(dir, 'outside/b/g.txt'), 'outside\n');
    const opener = new BeneathOpener(root);
    try {
      expect(read(opener, 'a/b/f.txt')).toBe('inside\n');
      // the repository's a/ moves away and a symlink to elsewhere takes its name
      renameSync(join(root, 'a'), join(dir, 'a-moved'));
      symlinkSync(join(dir, 'outside'), join(root, 'a'));
      // the next file of the same directory comes from the directory held open, never from outside
      expect(read(opener, 'a/b/g.txt')).toBe('inside too\n');
      // a file of another directory walks from the root again, and is refused
      expect(() => opener.open('a/f.txt')).toThrow(/a \(on the way to it\) is now a symlink/);
    } finally {
      opener.close();
    }
  });

  it('opens files of the root and of nested directories in any order', () => {
    writeFileSync(join(root, 'top.txt'), 'top\n');
    const opener = new BeneathOpener(root);
    try {
      expect(read(opener, 'top.txt')).toBe('top\n');
      expect(read(opener, 'a/b/f.txt')).toBe('inside\n');
      expect(read(opener, 'top.txt')).toBe('top\n');
    } finally {
      opener.close();
    }
  });
});
