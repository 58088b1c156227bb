// pathExists answers "absent" only for ENOENT and ENOTDIR; any other failure to look is EGJ_IO naming
// the path, so a disk error or a denied permission on .git is not taken for "no repository here".
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { pathExists } from '../../src/core/path-exists.js';
import { tempDir } from '../helpers/temp-store.js';

describe('pathExists', () => {
  it('is true for a file, a directory and a symlink to one', () => {
    const dir = tempDir('genjob-exists-');
    writeFileSync(join(dir, 'f'), 'x');
    mkdirSync(join(dir, 'd'));
    symlinkSync('f', join(dir, 'link'));
    expect([pathExists(join(dir, 'f')), pathExists(join(dir, 'd')), pathExists(join(dir, 'link'))]).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('is false for a missing path, a path under a file and a dangling symlink', () => {
    const dir = tempDir('genjob-exists-');
    writeFileSync(join(dir, 'f'), 'x');
    symlinkSync('nowhere', join(dir, 'dangling'));
    expect(pathExists(join(dir, 'missing'))).toBe(false);
    expect(pathExists(join(dir, 'f', 'below'))).toBe(false);
    expect(pathExists(join(dir, 'dangling'))).toBe(false);
  });

  it('reports any other failure to look as EGJ_IO naming the path and the errno (a symlink loop: ELOOP)', () => {
    const dir = tempDir('genjob-exists-');
    symlinkSync('b', join(dir, 'a'));
    symlinkSync('a', join(dir, 'b'));
    let caught: unknown;
    try {
      pathExists(join(dir, 'a'));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(IoError);
    expect((caught as IoError).code).toBe('EGJ_IO');
    expect((caught as IoError).message).toBe(
      `${join(dir, 'a')}: stat failed: too many symbolic links encountered (ELOOP)`,
    );
  });
});
