import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RecordUnreadableError } from '../../src/core/errors.js';
import { type FsPort, nodeFs } from '../../src/store/fs-port.js';
import { readRecordFile } from '../../src/store/read-record.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gj-record-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('readRecordFile', () => {
  it('reads a regular file whole, and a missing one as undefined', () => {
    writeFileSync(join(dir, 'a.json'), '{"a":1}');
    expect(readRecordFile(nodeFs, join(dir, 'a.json'))?.toString()).toBe('{"a":1}');
    expect(readRecordFile(nodeFs, join(dir, 'missing.json'))).toBeUndefined();
  });

  it.each([
    { name: 'a directory', make: (p: string) => mkdirSync(p), rule: 'is a directory' },
    {
      name: 'a FIFO (without blocking)',
      make: (p: string) => execFileSync('mkfifo', [p]),
      rule: 'is a FIFO',
    },
    {
      name: 'a symlink to /dev/zero',
      make: (p: string) => symlinkSync('/dev/zero', p),
      rule: 'is a symbolic link',
    },
    {
      name: 'a symlink to a regular file',
      make: (p: string) => {
        writeFileSync(`${p}.target`, '{}');
        symlinkSync(`${p}.target`, p);
      },
      rule: 'is a symbolic link',
    },
    {
      name: 'a file over the cap',
      make: (p: string) => writeFileSync(p, 'x'.repeat(101)),
      rule: 'over the cap of 100',
    },
  ])('refuses $name with EGJ_RECORD_UNREADABLE', ({ make, rule }) => {
    const p = join(dir, 'x.json');
    make(p);
    const err = (() => {
      try {
        readRecordFile(nodeFs, p, 100);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(RecordUnreadableError);
    expect((err as RecordUnreadableError).code).toBe('EGJ_RECORD_UNREADABLE');
    expect((err as Error).message).toContain(rule);
  });
});

/** nodeFs whose fstat reports `size` (a file that changed between the fstat and the read) and whose reads return at most `most` bytes. */
function skewed(o: { size?: number; most?: number }): FsPort & { reads: number } {
  const port = {
    ...nodeFs,
    reads: 0,
    fstatSync: ((fd: number) => {
      const st = nodeFs.fstatSync(fd);
      return o.size === undefined
        ? st
        : new Proxy(st, { get: (t, p) => (p === 'size' ? o.size : Reflect.get(t, p)) });
    }) as FsPort['fstatSync'],
    readSync: ((fd: number, buf: Buffer, off: number, len: number, pos: null) => {
      port.reads++;
      return nodeFs.readSync(fd, buf, off, Math.min(len, o.most ?? len), pos);
    }) as FsPort['readSync'],
  };
  return port;
}

describe('readRecordFile sized from its fstat', () => {
  const big = Buffer.from(Array.from({ length: 150_000 }, (_, i) => i % 251));

  it('reads a record of the size its fstat gave in one read', () => {
    writeFileSync(join(dir, 'r.json'), '{"a":1}');
    const port = skewed({});
    expect(readRecordFile(port, join(dir, 'r.json'))?.toString()).toBe('{"a":1}');
    expect(port.reads).toBe(1);
    writeFileSync(join(dir, 'empty.json'), '');
    expect(readRecordFile(port, join(dir, 'empty.json'))).toEqual(Buffer.alloc(0));
  });

  it('reads a file that grew after its fstat to its end', () => {
    writeFileSync(join(dir, 'g.json'), big);
    expect(readRecordFile(skewed({ size: 2 }), join(dir, 'g.json'))).toSatisfy(
      (b: Buffer | undefined) => b?.equals(big) === true,
    );
  });

  it('reads a file that shrank after its fstat to its end', () => {
    writeFileSync(join(dir, 's.json'), '{"a":1}');
    expect(readRecordFile(skewed({ size: 1000 }), join(dir, 's.json'))?.toString()).toBe('{"a":1}');
  });

  it('reads on after reads shorter than asked until one returns nothing', () => {
    writeFileSync(join(dir, 'p.json'), big);
    expect(readRecordFile(skewed({ most: 1000 }), join(dir, 'p.json'))).toSatisfy(
      (b: Buffer | undefined) => b?.equals(big) === true,
    );
  });

  it('refuses a file that grew past the cap after its fstat', () => {
    writeFileSync(join(dir, 'c.json'), 'x'.repeat(300));
    expect(() => readRecordFile(skewed({ size: 10 }), join(dir, 'c.json'), 100)).toThrow(
      /grew past the cap of 100 bytes/,
    );
  });
});
