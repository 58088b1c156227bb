import { closeSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openBeneath } from '../../src/transport/open-beneath.js';

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
