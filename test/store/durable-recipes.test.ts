// The durable recipes at their edges: the temp name a sweeper reads the writer from; what a failed fsync,
// close, link or rename reports and leaves (no temp file, the descriptor closed once); a batch publish with
// one directory fsync per directory; the temp sweep's age boundary and the names it leaves alone; and the
// small readers (readIfExists, peekRecord, exists, readdirOrEmpty, listNames) — one temp .gen/ per test.
import { execFileSync } from 'node:child_process';
import * as rawFs from 'node:fs';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IoError, RecordUnreadableError } from '../../src/core/errors.js';
import {
  createExclusive,
  discardStaged,
  exists,
  fsyncDir,
  listNames,
  moveState,
  peekRecord,
  publishExclusive,
  publishStaged,
  publishWithAlias,
  readdirOrEmpty,
  readIfExists,
  readRecord,
  replaceAdvisory,
  replaceFile,
  stageExclusive,
  sweepStaleTemps,
  writeTempFile,
} from '../../src/store/durable.js';
import type { FsPort } from '../../src/store/fs-port.js';
import { thisProcess } from '../../src/store/process-identity.js';
import { MAX_RECORD_BYTES } from '../../src/store/read-record.js';
import { Store } from '../../src/store/store.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

/**
 * node:fs itself (no namedFs: its errors reach the recipes raw, as from a caller's own port), with some calls
 * replaced, recording every fsync, close and rename by the path its descriptor was opened with.
 */
function rawPort(overrides: Partial<Record<keyof FsPort, (...args: never[]) => unknown>> = {}) {
  const paths = new Map<number, string>();
  const calls: string[] = [];
  const port: Record<string, unknown> = {};
  for (const name of Object.keys(OPS) as Array<keyof FsPort>) {
    const real = (rawFs as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!;
    const replaced = overrides[name] as ((...a: unknown[]) => unknown) | undefined;
    port[name] = (...args: unknown[]) => {
      if (name === 'fsyncSync' || name === 'closeSync') calls.push(`${name} ${paths.get(args[0] as number)}`);
      if (name === 'renameSync' || name === 'linkSync') calls.push(`${name} ${args[0]} ${args[1]}`);
      const out = (replaced ?? real).apply(rawFs, args);
      if (name === 'openSync') paths.set(out as number, String(args[0]));
      return out;
    };
  }
  return { port: port as unknown as FsPort, calls };
}
const OPS: Record<keyof FsPort, true> = {
  openSync: true,
  writeSync: true,
  fsyncSync: true,
  closeSync: true,
  linkSync: true,
  unlinkSync: true,
  renameSync: true,
  mkdirSync: true,
  readFileSync: true,
  readdirSync: true,
  lstatSync: true,
  statSync: true,
  rmSync: true,
  rmdirSync: true,
  utimesSync: true,
  readSync: true,
  fstatSync: true,
  fchmodSync: true,
};

const eio = (syscall: string) => () => {
  throw sysError('EIO', -5, syscall);
};

describe('writeTempFile and createExclusive', () => {
  it('names a temp <prefix><pid>-<start>-<n>-<random> in the given directory, with the exact mode asked for', () => {
    const store = tempStore('genjob-recipes-');
    const me = thisProcess();
    const a = writeTempFile(store, store.layout.tmp, Buffer.from('a'));
    const b = writeTempFile(store, store.layout.tmp, Buffer.from('b'), 0o640, '.obj-');
    expect(dirname(a)).toBe(store.layout.tmp);
    const name = /^\.tmp-(\d+)-(\d+)-(\d+)-([0-9a-z]{1,8})$/.exec(a.slice(store.layout.tmp.length + 1));
    expect(name?.slice(1, 3)).toEqual([String(me.pid), String(me.start)]);
    const bName = /^\.obj-(\d+)-(\d+)-(\d+)-[0-9a-z]{1,8}$/.exec(b.slice(store.layout.tmp.length + 1));
    expect(Number(bName?.[3])).toBe(Number(name?.[3]) + 1); // a per-process counter: never the same name twice
    expect(readFileSync(a, 'utf8')).toBe('a');
    expect(statSync(a).mode & 0o777).toBe(0o644);
    expect(statSync(b).mode & 0o777).toBe(0o640);
  });

  it('reports an fsync failure as EGJ_IO naming the file, closes the descriptor once and leaves no file', () => {
    const store = tempStore('genjob-recipes-');
    const { port, calls } = rawPort({ fsyncSync: eio('fsync') });
    const path = join(store.layout.tmp, 'x');
    const err = thrown(() => createExclusive({ fs: port }, path, Buffer.from('x')));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe(`${path}: fsync failed: i/o error (EIO)`);
    expect(calls.filter((c) => c.startsWith('closeSync'))).toEqual([`closeSync ${path}`]);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('never closes the descriptor a second time when the close itself fails (it is freed), and leaves no file', () => {
    const store = tempStore('genjob-recipes-');
    const { port, calls } = rawPort({
      closeSync: (fd: number) => {
        rawFs.closeSync(fd);
        throw sysError('EDQUOT', -122, 'close');
      },
    });
    const path = join(store.layout.tmp, 'x');
    const err = thrown(() => createExclusive({ fs: port }, path, Buffer.from('x')));
    expect((err as { code?: string }).code).toBe('EDQUOT');
    expect(calls.filter((c) => c.startsWith('closeSync'))).toHaveLength(1);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('reports the fsync failure, not a second error, when the half-made file is already gone (a sweeper took it)', () => {
    const store = tempStore('genjob-recipes-');
    const path = join(store.layout.tmp, 'x');
    const { port } = rawPort({
      fsyncSync: () => {
        rawFs.rmSync(path);
        throw sysError('EIO', -5, 'fsync');
      },
    });
    const err = thrown(() => createExclusive({ fs: port }, path, Buffer.from('x')));
    expect(err.message).toBe(`${path}: fsync failed: i/o error (EIO)`);
  });

  it('continues a short write until every byte is in the file', () => {
    const store = tempStore('genjob-recipes-');
    const lengths: number[] = [];
    const { port } = rawPort({
      writeSync: (fd: number, buf: Uint8Array, off: number, len: number) => {
        lengths.push(len);
        return rawFs.writeSync(fd, buf, off, Math.min(len, 3)); // a network filesystem may write less than asked
      },
    });
    const path = join(store.layout.tmp, 'x');
    createExclusive({ fs: port }, path, Buffer.from('0123456789'));
    expect(readFileSync(path, 'utf8')).toBe('0123456789');
    expect(lengths).toEqual([10, 7, 4, 1]);
  });

  it('throws EEXIST as is for a path already there, and leaves that file alone', () => {
    const store = tempStore('genjob-recipes-');
    const path = join(store.layout.tmp, 'x');
    writeFileSync(path, 'theirs');
    const err = thrown(() => createExclusive(store, path, Buffer.from('ours')));
    expect((err as IoError).errno).toBe('EEXIST');
    expect(readFileSync(path, 'utf8')).toBe('theirs');
  });
});

describe('fsyncDir', () => {
  it('reports a failed directory fsync as EGJ_IO "fsync of directory" and closes the directory', () => {
    const store = tempStore('genjob-recipes-');
    const { port, calls } = rawPort({ fsyncSync: eio('fsync') });
    const err = thrown(() => fsyncDir({ fs: port }, store.layout.tmp));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe(`${store.layout.tmp}: fsync of directory failed: i/o error (EIO)`);
    expect(calls).toEqual([`fsyncSync ${store.layout.tmp}`, `closeSync ${store.layout.tmp}`]);
  });

  it('opens only a directory: a regular file in its place fails with ENOTDIR', () => {
    const store = tempStore('genjob-recipes-');
    const file = join(store.layout.tmp, 'plain');
    writeFileSync(file, '');
    expect(() => fsyncDir(store, file)).toThrow(
      expect.objectContaining({ code: 'EGJ_IO', errno: 'ENOTDIR' }),
    );
  });
});

describe('publishExclusive', () => {
  it('fails with EGJ_IO naming the target when the link fails and nothing is there, and leaves no temp', () => {
    const store = tempStore('genjob-recipes-');
    const target = store.layout.receipt('a'.repeat(64));
    const { port } = rawPort({ linkSync: eio('link') });
    const err = thrown(() => publishExclusive(new Store(store.root, port), target, Buffer.from('x')));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe(`${target}: link failed: i/o error (EIO)`);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
    expect(readdirSync(dirname(target))).toEqual([]);
  });

  it('reports the link failure, not a second error, when its temp is already gone (a sweeper took it)', () => {
    const store = tempStore('genjob-recipes-');
    const target = store.layout.receipt('d'.repeat(64));
    const { port } = rawPort({
      linkSync: (from: string) => {
        rawFs.rmSync(from);
        throw sysError('EIO', -5, 'link');
      },
    });
    const err = thrown(() => publishExclusive(new Store(store.root, port), target, Buffer.from('x')));
    expect(err.message).toBe(`${target}: link failed: i/o error (EIO)`);
  });

  it('counts EEXIST as lost even when the winner is gone again by the time it looks, and fsyncs no directory', () => {
    const store = tempStore('genjob-recipes-');
    const target = store.layout.receipt('b'.repeat(64));
    const { port, calls } = rawPort({
      linkSync: () => {
        throw sysError('EEXIST', -17, 'link');
      },
    });
    expect(publishExclusive(new Store(store.root, port), target, Buffer.from('x'))).toBe(false);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
    expect(calls.filter((c) => c.startsWith('fsyncSync'))).toHaveLength(1); // the temp's own, no directory
  });
});

describe('publishWithAlias', () => {
  it('gives one fsynced temp both names, the alias replaced; false and nothing left when the target stood first', () => {
    const store = tempStore('genjob-recipes-');
    const target = join(store.layout.dir('dead'), 'record');
    const alias = store.layout.lease('f'.repeat(64));
    writeFileSync(alias, 'old');
    expect(publishWithAlias(store, target, alias, Buffer.from('one'))).toBe(true);
    expect(readFileSync(alias, 'utf8')).toBe('one');
    expect(statSync(alias).ino).toBe(statSync(target).ino);
    expect(publishWithAlias(store, target, alias, Buffer.from('two'))).toBe(false);
    expect([readFileSync(target, 'utf8'), readFileSync(alias, 'utf8')]).toEqual(['one', 'one']);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('names the alias when its rename fails, and leaves no temp (the record stands, as a publish would)', () => {
    const store = tempStore('genjob-recipes-');
    const target = join(store.layout.dir('dead'), 'record');
    const alias = store.layout.lease('f'.repeat(64));
    const { port } = rawPort({ renameSync: eio('rename') });
    const err = thrown(() => publishWithAlias(new Store(store.root, port), target, alias, Buffer.from('x')));
    expect(err.message).toBe(`${alias}: rename failed: i/o error (EIO)`);
    expect(readFileSync(target, 'utf8')).toBe('x');
    expect(existsSync(alias)).toBe(false);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });
  it("reports the record's directory fsync failing as itself, and leaves neither a temp nor a lease", () => {
    const store = tempStore('genjob-recipes-');
    const target = join(store.layout.dir('dead'), 'record');
    const alias = store.layout.lease('f'.repeat(64));
    let fsyncs = 0;
    const { port } = rawPort({
      fsyncSync: (fd: number) => {
        fsyncs += 1;
        if (fsyncs === 2) throw sysError('EIO', -5, 'fsync');
        rawFs.fsyncSync(fd);
      },
    });
    const err = thrown(() => publishWithAlias(new Store(store.root, port), target, alias, Buffer.from('x')));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe(`${dirname(target)}: fsync of directory failed: i/o error (EIO)`);
    expect(existsSync(alias)).toBe(false);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });
});

describe('publishStaged', () => {
  it('links each staged file unless its target exists, then fsyncs each directory that got one, once', () => {
    const store = tempStore('genjob-recipes-');
    const [o1, o2, o3] = ['1', '2', '3'].map((c) => store.layout.object(c.repeat(64))) as [
      string,
      string,
      string,
    ];
    const receipt = store.layout.receipt('r'.repeat(64));
    writeFileSync(o2, 'theirs');
    const staged = [o1, o2, o3, receipt].map((t) => stageExclusive(store, t, Buffer.from(`ours ${t}`)));
    const { port, calls } = rawPort();
    expect(publishStaged(new Store(store.root, port), staged)).toEqual([true, false, true, true]);
    expect(readFileSync(o2, 'utf8')).toBe('theirs');
    expect(readFileSync(o3, 'utf8')).toBe(`ours ${o3}`);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
    const fsyncs = calls.filter((c) => c.startsWith('fsyncSync'));
    expect(fsyncs).toEqual([`fsyncSync ${dirname(o1)}`, `fsyncSync ${dirname(receipt)}`]);
    expect(calls.findIndex((c) => c.startsWith('fsyncSync'))).toBeGreaterThan(
      calls.findLastIndex((c) => c.startsWith('linkSync')),
    );
  });

  it('fsyncs no directory when every target was there already', () => {
    const store = tempStore('genjob-recipes-');
    const target = store.layout.object('4'.repeat(64));
    writeFileSync(target, 'theirs');
    const { port, calls } = rawPort();
    const pub = new Store(store.root, port);
    expect(publishStaged(pub, [stageExclusive(pub, target, Buffer.from('ours'))])).toEqual([false]);
    expect(calls.filter((c) => c.startsWith('fsyncSync ') && !c.includes('/.gen/tmp/'))).toEqual([]);
  });

  it('fails with EGJ_IO naming the target whose link failed, and removes every temp left', () => {
    const store = tempStore('genjob-recipes-');
    const targets = ['5', '6', '7'].map((c) => store.layout.object(c.repeat(64)));
    const staged = targets.map((t) => stageExclusive(store, t, Buffer.from('x')));
    const { port } = rawPort({
      linkSync: (from: string, to: string) => {
        if (to === targets[1]) throw sysError('EIO', -5, 'link');
        rawFs.linkSync(from, to);
      },
    });
    const err = thrown(() => publishStaged(new Store(store.root, port), staged));
    expect(err.message).toBe(`${targets[1]}: link failed: i/o error (EIO)`);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
    expect(readdirSync(store.layout.dir('objects'))).toEqual([targets[0]!.split('/').at(-1)]);
  });

  it('discards staged temps without failing when a removal fails (the sweeper gets them later)', () => {
    const store = tempStore('genjob-recipes-');
    const staged = ['8', '9'].map((c) =>
      stageExclusive(store, store.layout.object(c.repeat(64)), Buffer.from('x')),
    );
    const removed: string[] = [];
    const flaky = hookedStore(store, (call, args, proceed) => {
      if (call === 'rmSync' && args[0] === staged[0]!.tmp) throw sysError('EIO', -5, 'rm');
      if (call === 'rmSync') removed.push(String(args[0]));
      return proceed();
    });
    expect(() => discardStaged(flaky, staged)).not.toThrow();
    expect(removed).toEqual([staged[1]!.tmp]);
    expect(readdirSync(store.layout.tmp)).toEqual([staged[0]!.tmp.split('/').at(-1)]);
  });
});

describe('replaceFile and moveState', () => {
  it('replaces the target, and on a failed rename names it and leaves no temp beside it', () => {
    const store = tempStore('genjob-recipes-');
    const target = store.layout.lease('c'.repeat(64));
    replaceFile(store, target, Buffer.from('one'));
    replaceFile(store, target, Buffer.from('two'), 0o600);
    expect(readFileSync(target, 'utf8')).toBe('two');
    expect(statSync(target).mode & 0o777).toBe(0o600);
    const { port } = rawPort({ renameSync: eio('rename') });
    const err = thrown(() => replaceFile({ fs: port }, target, Buffer.from('three')));
    expect(err.message).toBe(`${target}: rename failed: i/o error (EIO)`);
    expect(readdirSync(dirname(target))).toEqual([target.split('/').at(-1)]);
    expect(readFileSync(target, 'utf8')).toBe('two');
  });

  it('reports the rename failure, not a second error, when its temp is already gone (a sweeper took it)', () => {
    const store = tempStore('genjob-recipes-');
    const target = store.layout.lease('e'.repeat(64));
    const swept = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync') rawFs.rmSync(String(args[0]));
      return proceed();
    });
    const err = thrown(() => replaceFile(swept, target, Buffer.from('x')));
    expect(err.message).toMatch(
      new RegExp(`→ ${target}: rename failed: no such file or directory \\(ENOENT\\)$`),
    );
    expect(readdirSync(dirname(target))).toEqual([]);
  });

  it('replaces an advisory record in place, with the exact mode, without one fsync, and no temp stays', () => {
    const store = tempStore('genjob-recipes-');
    const target = join(store.layout.dir('locks'), 'x.lock.owner');
    const { port, calls } = rawPort();
    replaceAdvisory({ fs: port }, target, Buffer.from('one'));
    replaceAdvisory({ fs: port }, target, Buffer.from('two'), 0o600);
    expect(readFileSync(target, 'utf8')).toBe('two');
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(calls.filter((c) => c.startsWith('fsyncSync'))).toEqual([]);
    expect(calls.filter((c) => c.startsWith('renameSync'))).toHaveLength(2);
    const failing = rawPort({ renameSync: eio('rename') });
    const err = thrown(() => replaceAdvisory({ fs: failing.port }, target, Buffer.from('three')));
    expect(err.message).toBe(`${target}: rename failed: i/o error (EIO)`);
    expect(readdirSync(dirname(target))).toEqual(['x.lock.owner']);
    expect(readFileSync(target, 'utf8')).toBe('two');
  });

  it('fsyncs a directory once when the move stays inside it', () => {
    const store = tempStore('genjob-recipes-');
    const from = join(store.layout.dir('dead'), 'a');
    const to = join(store.layout.dir('dead'), 'b');
    writeFileSync(from, 'x');
    const { port, calls } = rawPort();
    moveState(new Store(store.root, port), from, to);
    expect(calls).toEqual([
      `renameSync ${from} ${to}`,
      `fsyncSync ${dirname(to)}`,
      `closeSync ${dirname(to)}`,
    ]);
  });
});

describe('sweepStaleTemps', () => {
  it('removes a temp of this live process once it is older than maxAgeMs, not at exactly maxAgeMs', () => {
    const store = tempStore('genjob-recipes-');
    const tmp = writeTempFile(store, store.layout.tmp, Buffer.from('x'));
    const at = Math.floor(Date.now() / 1000) * 1000 - 10_000;
    utimesSync(tmp, new Date(at), new Date(at));
    expect(sweepStaleTemps(store, 60_000, at + 60_000)).toBe(0);
    expect(sweepStaleTemps(store, 60_000, at + 60_001)).toBe(1);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('leaves names that are not <.tmp-><pid>- of a real pid alone, however old', () => {
    const store = tempStore('genjob-recipes-');
    const names = [
      'x.tmp-999999999-1-1-abc',
      '.tmp-0-1-1-abc',
      '.tmp-abc',
      '.tmp--1-1-abc',
      '.tmp-999999999',
    ];
    for (const n of names) writeFileSync(join(store.layout.tmp, n), '');
    expect(sweepStaleTemps(store, 60_000, Date.now() + 3_600_000)).toBe(0);
    expect(readdirSync(store.layout.tmp).sort()).toEqual([...names].sort());
  });

  it('removes at once a temp whose pid now names another process (another start time), and counts every directory', () => {
    const store = tempStore('genjob-recipes-');
    const reused = `.tmp-${process.ppid}-12-34-abcdef`; // multi-digit: the whole start is read
    writeFileSync(join(store.layout.tmp, reused), '');
    writeFileSync(join(store.layout.dir('objects'), '.tmp-999999999-1-1-abc'), '');
    writeFileSync(join(store.layout.dir('objects'), '.tmp-999999998-1-1-abc'), '');
    expect(sweepStaleTemps(store)).toBe(3);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
    expect(readdirSync(store.layout.dir('objects'))).toEqual([]);
  });

  it('never takes a fresh temp carrying this process pid for a dead writer, whatever start time it names', () => {
    const store = tempStore('genjob-recipes-');
    const own = `.tmp-${process.pid}-1-1-abcdef`;
    writeFileSync(join(store.layout.tmp, own), '');
    expect(sweepStaleTemps(store)).toBe(0);
    expect(readdirSync(store.layout.tmp)).toEqual([own]);
  });

  it('sweeps only the directories it is given, fsyncing one only when something left it', () => {
    const store = tempStore('genjob-recipes-');
    const other = join(store.root, 'elsewhere');
    mkdirSync(other);
    writeFileSync(join(other, '.tmp-999999999-1-1-abc'), '');
    writeFileSync(join(store.layout.tmp, '.tmp-999999999-1-1-abc'), '');
    const { port, calls } = rawPort();
    const swept = new Store(store.root, port);
    expect(sweepStaleTemps(swept, 3_600_000, Date.now(), [other, store.layout.dir('leases')])).toBe(1);
    expect(calls.filter((c) => c.startsWith('fsyncSync'))).toEqual([`fsyncSync ${other}`]);
    expect(readdirSync(store.layout.tmp)).toHaveLength(1);
  });

  it('does not fail when another sweeper removes a temp between the look and the removal', () => {
    const store = tempStore('genjob-recipes-');
    const name = join(store.layout.tmp, '.tmp-999999999-1-1-abc');
    writeFileSync(name, '');
    const racing = hookedStore(store, (call, args, proceed) => {
      if (call === 'rmSync' && args[0] === name) rawFs.rmSync(name);
      return proceed();
    });
    expect(sweepStaleTemps(racing)).toBe(1);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('skips a temp that is gone before it is looked at', () => {
    const store = tempStore('genjob-recipes-');
    const name = join(store.layout.tmp, '.tmp-999999999-1-1-abc');
    writeFileSync(name, '');
    const racing = hookedStore(store, (call, args, proceed) => {
      if (call === 'lstatSync' && args[0] === name) rawFs.rmSync(name);
      return proceed();
    });
    expect(sweepStaleTemps(racing)).toBe(0);
  });
});

describe('the readers', () => {
  it('readIfExists: the bytes, undefined when missing, and unreadable past its cap', () => {
    const store = tempStore('genjob-recipes-');
    const file = join(store.layout.tmp, 'f');
    expect(readIfExists(store, file)).toBeUndefined();
    writeFileSync(file, '12345');
    expect(readIfExists(store, file)?.toString()).toBe('12345');
    expect(() => readIfExists(store, file, 4)).toThrow(RecordUnreadableError);
  });

  it('readRecord: a record over the 16 MiB cap is unreadable, one at the cap reads', () => {
    const store = tempStore('genjob-recipes-');
    const file = join(store.layout.tmp, 'big');
    writeFileSync(file, '');
    truncateSync(file, MAX_RECORD_BYTES);
    expect(readRecord(store, file)?.length).toBe(MAX_RECORD_BYTES);
    truncateSync(file, MAX_RECORD_BYTES + 1);
    expect(thrown(() => readRecord(store, file)).message).toBe(
      `${file}: is ${MAX_RECORD_BYTES + 1} bytes, over the cap of ${MAX_RECORD_BYTES}; a record must be a regular file`,
    );
  });

  it('peekRecord: a FIFO reads as no bytes, a missing file as undefined, an I/O error is thrown', () => {
    const store = tempStore('genjob-recipes-');
    const fifo = join(store.layout.tmp, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(peekRecord(store, fifo)).toEqual(Buffer.alloc(0));
    expect(peekRecord(store, join(store.layout.tmp, 'none'))).toBeUndefined();
    const failing = hookedStore(store, (call, _args, proceed) => {
      if (call === 'openSync') throw sysError('EIO', -5, 'open');
      return proceed();
    });
    expect(() => peekRecord(failing, fifo)).toThrow(IoError);
  });

  it('exists: true for anything there (a dangling symlink too), false when missing, an I/O error thrown', () => {
    const store = tempStore('genjob-recipes-');
    const link = join(store.layout.tmp, 'dangling');
    rawFs.symlinkSync('/nonexistent/target', link);
    expect(exists(store, link)).toBe(true);
    expect(exists(store, join(store.layout.tmp, 'none'))).toBe(false);
    const failing = hookedStore(store, (call, _args, proceed) => {
      if (call === 'lstatSync') throw sysError('EACCES', -13, 'lstat');
      return proceed();
    });
    expect(() => exists(failing, link)).toThrow(expect.objectContaining({ code: 'EGJ_IO', errno: 'EACCES' }));
  });

  it('readdirOrEmpty: no names for a missing directory, EGJ_IO "readdir" for a file in its place', () => {
    const store = tempStore('genjob-recipes-');
    expect(readdirOrEmpty(store, join(store.layout.tmp, 'none'))).toEqual([]);
    const file = join(store.layout.tmp, 'plain');
    writeFileSync(file, '');
    const { port } = rawPort();
    const err = thrown(() => readdirOrEmpty({ fs: port }, file));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe(`${file}: readdir failed: not a directory (ENOTDIR)`);
  });

  it('listNames: the names with the suffix, without it, sorted, never a dotfile', () => {
    const store = tempStore('genjob-recipes-');
    const dir = store.layout.dir('applying');
    const keys = Array.from({ length: 24 }, (_, i) => `${(i * 7919).toString(16).padStart(4, '0')}k`);
    for (const k of keys) writeFileSync(join(dir, `${k}.json`), '');
    for (const n of ['.tmp-1.json', 'c.json.bak', 'e.txt', 'd.txt']) writeFileSync(join(dir, n), '');
    expect(listNames(store, dir)).toEqual([...keys].sort());
    expect(listNames(store, dir, '.txt')).toEqual(['d', 'e']);
    // readdir lists `a-b.json` before `a.json` ('-' < '.'); without the suffix `a` comes first
    for (const n of ['a.log', 'a-b.log']) writeFileSync(join(dir, n), '');
    expect(listNames(store, dir, '.log')).toEqual(['a', 'a-b']);
    expect(listNames(store, join(dir, 'none'))).toEqual([]);
  });
});
