// The store's fs port names every failure once, where the call is made: EGJ_IO (exit 5) with the
// operation, the file (an fd by the path it was opened with) and the errno in words; EDQUOT is named
// although Node calls it "Unknown system error -122"; a recursive mkdir reports the level that failed.
import * as fs from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errnoOf, IoError } from '../../src/core/errors.js';
import { type FsPort, namedFs, nodeFs } from '../../src/store/fs-port.js';
import { sysError } from '../helpers/hooked-fs.js';
import { tempDir } from '../helpers/temp-store.js';

function failing(name: keyof FsPort, err: () => Error): FsPort {
  return namedFs({
    ...fs,
    [name]: () => {
      throw err();
    },
  } as unknown as FsPort);
}

describe('namedFs', () => {
  it('turns a failed write into EGJ_IO naming the file its fd was opened on and the errno in words', () => {
    const dir = tempDir('genjob-fsport-');
    const port = failing('writeSync', () => sysError('ENOSPC', -28, 'write'));
    const file = join(dir, 'a');
    const fd = port.openSync(file, 'w');
    let err: unknown;
    try {
      port.writeSync(fd, Buffer.from('x'));
    } catch (e) {
      err = e;
    } finally {
      port.closeSync(fd);
    }
    expect(err).toBeInstanceOf(IoError);
    expect(err).toMatchObject({ code: 'EGJ_IO', exitCode: 5, op: 'write', file, errno: 'ENOSPC' });
    expect((err as Error).message).toBe(`${file}: write failed: no space left on device (ENOSPC)`);
  });

  it('names EDQUOT, which Node reports as "Unknown system error -122"', () => {
    const port = failing('fsyncSync', () => sysError('Unknown system error -122', -122, 'fsync'));
    const err = (() => {
      try {
        port.fsyncSync(99);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toMatchObject({ errno: 'EDQUOT', file: 'file descriptor 99' });
    expect((err as Error).message).toContain('disk quota exceeded (EDQUOT)');
  });

  it('names both ends of a rename, and errnoOf still sees the errno for callers that expect ENOENT', () => {
    const dir = tempDir('genjob-fsport-');
    const err = (() => {
      try {
        nodeFs.renameSync(join(dir, 'missing'), join(dir, 'b'));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(IoError);
    expect(errnoOf(err)).toBe('ENOENT');
    expect((err as Error).message).toBe(
      `${join(dir, 'missing')} → ${join(dir, 'b')}: rename failed: no such file or directory (ENOENT)`,
    );
  });

  it('reports the level of a recursive mkdir that failed, with its own errno', () => {
    const dir = tempDir('genjob-fsport-');
    const refused = join(dir, 'a');
    const port = namedFs({
      ...fs,
      mkdirSync: (p: fs.PathLike, o?: fs.MakeDirectoryOptions) => {
        if (String(p) === refused) throw sysError('EACCES', -13, 'mkdir', refused);
        return fs.mkdirSync(p, o);
      },
    } as unknown as FsPort);
    const err = (() => {
      try {
        port.mkdirSync(join(dir, 'a', 'b', 'c'), { recursive: true });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toMatchObject({ op: 'mkdir', file: refused, errno: 'EACCES' });
    // and it makes every missing level when nothing fails
    nodeFs.mkdirSync(join(dir, 'x', 'y', 'z'), { recursive: true });
    nodeFs.mkdirSync(join(dir, 'x', 'y', 'z'), { recursive: true });
    expect(fs.statSync(join(dir, 'x', 'y', 'z')).isDirectory()).toBe(true);
  });

  it('passes errors that are no system error through untouched (a bug stays a bug)', () => {
    const port = failing('readdirSync', () => new TypeError('boom'));
    expect(() => port.readdirSync('/')).toThrow(TypeError);
  });
});

describe('IoError.wrap', () => {
  it('wraps once: an IoError is passed on as it is', () => {
    const first = new IoError('write', '/x', sysError('EIO', -5, 'write'));
    expect(IoError.wrap('append', '/y', first)).toBe(first);
    expect(first.message).toBe('/x: write failed: i/o error (EIO)');
  });
});
