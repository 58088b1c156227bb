// Paths compared as the files they really are: a symlink anywhere on the way resolves, a tail that does
// not exist yet stays as written under its real head, and "beneath" goes by whole components.
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { realPath, rebase, within } from '../../src/sandbox/real-path.js';
import { tempDir } from '../helpers/temp-store.js';

describe('realPath', () => {
  it('resolves a symlinked directory on the way and a rotation link at the end', () => {
    const dir = realpathSync(tempDir('gj-real-'));
    mkdirSync(join(dir, 'keys'));
    writeFileSync(join(dir, 'keys/2026.key'), 'k');
    symlinkSync('2026.key', join(dir, 'keys/current.key'));
    symlinkSync(join(dir, 'keys'), join(dir, 'via'));
    expect(realPath(join(dir, 'via/current.key'))).toBe(join(dir, 'keys/2026.key'));
    expect(realPath(`${join(dir, 'via')}/`)).toBe(join(dir, 'keys'));
  });

  it('keeps a tail that does not exist yet beneath the real path of what does', () => {
    const dir = realpathSync(tempDir('gj-real-'));
    symlinkSync(dir, join(dir, 'link'));
    expect(realPath(join(dir, 'link/not/yet'))).toBe(join(dir, 'not/yet'));
    expect(realPath('/no-such-root-dir/x')).toBe('/no-such-root-dir/x');
  });

  it('keeps a link that loops as written (it names no file)', () => {
    const dir = realpathSync(tempDir('gj-real-'));
    symlinkSync('loop', join(dir, 'loop'));
    expect(realPath(join(dir, 'loop'))).toBe(join(dir, 'loop'));
  });
});

describe('within and rebase', () => {
  it.each([
    { inner: '/a/b', outer: '/a/b', is: true },
    { inner: '/a/b/c', outer: '/a/b', is: true },
    { inner: '/a/bc', outer: '/a/b', is: false },
    { inner: '/a', outer: '/a/b', is: false },
    { inner: '/anything', outer: '/', is: true },
  ])('$inner within $outer: $is', (c) => {
    expect(within(c.inner, c.outer)).toBe(c.is);
  });

  it('places a path under one mount point at its place under another', () => {
    expect(rebase('/data/cache/x', '/data', '/link')).toBe('/link/cache/x');
    expect(rebase('/data', '/data', '/link')).toBe('/link');
    expect(rebase('/data/x', '/data', '/link/')).toBe('/link/x');
  });
});
