import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RecordUnreadableError } from '../../src/core/errors.js';
import { nodeFs } from '../../src/store/fs-port.js';
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
