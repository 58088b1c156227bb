import { mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveRepoPath } from '../../src/apply/repo-path.js';
import { ConflictError, GenjobError } from '../../src/core/errors.js';
import { Store } from '../../src/store/store.js';
import { removeTempDirs, snapshot, tempDir } from './fixture.js';

afterEach(removeTempDirs);

function repo() {
  const root = tempDir();
  const outside = tempDir('genjob-outside-');
  mkdirSync(join(root, 'dir'));
  writeFileSync(join(root, 'dir/file.txt'), 'x');
  writeFileSync(join(root, 'plain'), 'p');
  symlinkSync(outside, join(root, 'link-dir'));
  symlinkSync(join(root, 'plain'), join(root, 'dir/link-file'));
  mkdirSync(join(root, 'dir/sub'));
  return { root, outside, store: new Store(root) };
}

describe('resolveRepoPath', () => {
  it.each([
    { name: 'a regular file', path: 'dir/file.txt', file: true },
    { name: 'an absent file in a present directory', path: 'dir/new.txt', file: false },
    { name: 'an absent file under an absent directory', path: 'no/such/dir/f', file: false },
  ])('finds $name without writing anything', ({ path, file }) => {
    const r = repo();
    const before = snapshot(r.root);
    const target = resolveRepoPath(r.store, path, { create: false });
    expect(target.abs).toBe(join(r.root, path));
    expect(target.file !== null).toBe(file);
    expect(snapshot(r.root)).toEqual(before);
  });

  it('creates missing directories one at a time with mode 0755', () => {
    const r = repo();
    const target = resolveRepoPath(r.store, 'dir/a/b/c.txt', { create: true });
    expect(target.file).toBeNull();
    expect(statSync(join(r.root, 'dir/a')).mode & 0o777).toBe(0o755);
    expect(statSync(join(r.root, 'dir/a/b')).mode & 0o777).toBe(0o755);
  });

  it.each([
    {
      name: 'a directory that is a symlink',
      path: 'link-dir/x.txt',
      rule: 'its directory link-dir is a symlink',
    },
    { name: 'a target that is a symlink', path: 'dir/link-file', rule: 'the target is a symlink' },
    {
      name: 'a target that is a directory',
      path: 'dir/sub',
      rule: 'the target exists but is not a regular file',
    },
    {
      name: 'a file in the directory chain',
      path: 'plain/x',
      rule: 'plain is in its directory chain but is not a directory',
    },
  ])('refuses $name as EGJ_UNSAFE_PATH (exit 4), creating nothing outside', ({ path, rule }) => {
    const r = repo();
    const outside = snapshot(r.outside);
    for (const create of [false, true]) {
      const err = (() => {
        try {
          resolveRepoPath(r.store, path, { create });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(ConflictError);
      expect((err as ConflictError).code).toBe('EGJ_UNSAFE_PATH');
      expect((err as ConflictError).message).toBe(
        `${path}: ${rule}; genjob never writes outside the repository or through a symlink`,
      );
    }
    expect(snapshot(r.outside)).toEqual(outside);
  });

  it.each([
    '../escape',
    '/etc/passwd',
    '.gen/applied/x',
    'a//b',
    'vendor/.git/config',
    '.GIT/config',
    'GEN~1/x',
  ])('refuses the non-contract path %s', (path) => {
    const r = repo();
    expect(() => resolveRepoPath(r.store, path, { create: true })).toThrow(GenjobError);
  });
});
