// The durable recipes: publish never clobbers, move fsyncs both directories, an fsync error is fatal
// and never retried, and the temp files of a writer that died mid-publish are swept.
import { readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { moveState, publishExclusive, replaceFile, sweepStaleTemps } from '../../src/store/durable.js';
import { type FsPort, nodeFs } from '../../src/store/fs-port.js';
import { Store } from '../../src/store/store.js';
import { crashingFs } from '../helpers/crashing-fs.js';
import { tempStore } from '../helpers/temp-store.js';

/** A root whose .gen/ was made with the real fs (a test then opens it through its own port). */
function freshRoot(): string {
  return tempStore('genjob-durable-').root;
}

/** A port that records, in order, every rename and every fsync (by the path its fd was opened with). */
function recordingFs(): FsPort & { calls: string[] } {
  const paths = new Map<number, string>();
  const calls: string[] = [];
  const port = {
    ...nodeFs,
    openSync: (path: string, ...rest: unknown[]) => {
      const fd = (nodeFs.openSync as (...a: unknown[]) => number)(path, ...rest);
      paths.set(fd, path);
      return fd;
    },
    fsyncSync: (fd: number) => {
      calls.push(`fsync ${paths.get(fd)}`);
      nodeFs.fsyncSync(fd);
    },
    renameSync: (a: string, b: string) => {
      calls.push(`rename ${a} ${b}`);
      nodeFs.renameSync(a, b);
    },
    calls,
  };
  return port as unknown as FsPort & { calls: string[] };
}

/** A port whose fsyncSync fails with EIO and counts its calls. */
function eioFs(): FsPort & { fsyncs: number } {
  const state = { fsyncs: 0 };
  const port = {
    ...nodeFs,
    fsyncSync: () => {
      state.fsyncs += 1;
      throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync' });
    },
  };
  Object.defineProperty(port, 'fsyncs', { get: () => state.fsyncs });
  return port as unknown as FsPort & { fsyncs: number };
}

describe('publishExclusive', () => {
  it('creates the file when nothing is there and never clobbers what is', () => {
    const store = new Store(freshRoot());
    const target = store.layout.receipt('a'.repeat(64));
    expect(publishExclusive(store, target, Buffer.from('first'))).toBe(true);
    expect(publishExclusive(store, target, Buffer.from('second'))).toBe(false);
    expect(readFileSync(target, 'utf8')).toBe('first');
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('counts a link that fails with another errno as lost when the target is there (sshfs says EPERM)', () => {
    const root = freshRoot();
    const target = new Store(root).layout.receipt('c'.repeat(64));
    writeFileSync(target, 'first');
    const eperm = Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
    const sshfsLike: FsPort = {
      ...nodeFs,
      linkSync: () => {
        throw eperm;
      },
    };
    const store = new Store(root, sshfsLike);
    expect(publishExclusive(store, target, Buffer.from('second'))).toBe(false);
    expect(readFileSync(target, 'utf8')).toBe('first');
    expect(readdirSync(store.layout.tmp)).toEqual([]);
    // with nothing there, the same error is a real one
    expect(() => publishExclusive(store, `${target}.other`, Buffer.from('x'))).toThrow(IoError);
  });

  it('fsyncs the temp file before the link and the directory after it', () => {
    const root = freshRoot();
    const fs = recordingFs();
    const store = new Store(root, fs);
    const target = store.layout.receipt('b'.repeat(64));
    publishExclusive(store, target, Buffer.from('x'));
    expect(fs.calls).toHaveLength(2);
    expect(fs.calls[0]).toMatch(/^fsync .*\/\.gen\/tmp\/\.tmp-/);
    expect(fs.calls[1]).toBe(`fsync ${dirname(target)}`);
  });
});

describe('moveState', () => {
  it('renames, then fsyncs the destination and the source directory before returning', () => {
    const root = freshRoot();
    const fs = recordingFs();
    const store = new Store(root, fs);
    const from = store.layout.jobFile('queue', 'c'.repeat(64));
    const to = store.layout.jobFile('running', 'c'.repeat(64));
    writeFileSync(from, 'job');
    moveState(store, from, to);
    expect(fs.calls).toEqual([`rename ${from} ${to}`, `fsync ${dirname(to)}`, `fsync ${dirname(from)}`]);
  });

  it('throws an error whose errno is ENOENT when the file was moved by someone else', () => {
    const store = new Store(freshRoot());
    expect(() =>
      moveState(
        store,
        store.layout.jobFile('queue', 'd'.repeat(64)),
        store.layout.jobFile('running', 'd'.repeat(64)),
      ),
    ).toThrow(expect.objectContaining({ code: 'EGJ_IO', errno: 'ENOENT' }));
  });
});

describe('an fsync error', () => {
  const cases = [
    {
      name: 'publishExclusive (file fsync)',
      run: (s: Store) => publishExclusive(s, s.layout.receipt('e'.repeat(64)), Buffer.from('x')),
    },
    {
      name: 'replaceFile (file fsync)',
      run: (s: Store) => replaceFile(s, s.layout.lease('e'.repeat(64)), Buffer.from('x')),
    },
    {
      name: 'moveState (directory fsync)',
      run: (s: Store) => {
        writeFileSync(s.layout.jobFile('queue', 'e'.repeat(64)), 'job');
        moveState(s, s.layout.jobFile('queue', 'e'.repeat(64)), s.layout.jobFile('running', 'e'.repeat(64)));
      },
    },
  ];
  for (const c of cases) {
    it(`surfaces from ${c.name} as an IoError with the EIO cause, after exactly one fsync`, () => {
      const fs = eioFs();
      const store = new Store(freshRoot(), fs);
      let caught: unknown;
      try {
        c.run(store);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(IoError);
      expect(((caught as Error).cause as NodeJS.ErrnoException).code).toBe('EIO');
      expect(fs.fsyncs).toBe(1); // never retried, never assumed to have worked
    });
  }

  it('leaves no published file when the temp file could not be fsynced', () => {
    const store = new Store(freshRoot(), eioFs());
    const target = store.layout.receipt('f'.repeat(64));
    expect(() => publishExclusive(store, target, Buffer.from('x'))).toThrow(IoError);
    expect(readdirSync(dirname(target))).toEqual([]);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('leaves no temp file when the close after a good write and fsync fails, and names the close', () => {
    // the descriptor is freed by the failed close (Linux); only the failure is simulated after it
    const closeFails = {
      ...nodeFs,
      closeSync: (fd: number) => {
        nodeFs.closeSync(fd);
        throw Object.assign(new Error('EDQUOT: close'), { code: 'EDQUOT', errno: -122, syscall: 'close' });
      },
    } as unknown as FsPort;
    const store = new Store(freshRoot(), closeFails);
    const target = store.layout.receipt('e'.repeat(64));
    expect(() => publishExclusive(store, target, Buffer.from('x'))).toThrow(/EDQUOT/);
    expect(readdirSync(dirname(target))).toEqual([]);
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });
});

describe('sweepStaleTemps', () => {
  it('removes the temp file of a writer that crashed inside publishExclusive, and nothing else', () => {
    const root = freshRoot();
    const real = new Store(root);
    // find the call after the temp file is written (its fsync) and crash there
    const probe = crashingFs(nodeFs, Number.POSITIVE_INFINITY);
    publishExclusive(new Store(root, probe), real.layout.receipt('0'.repeat(64)), Buffer.from('probe'));
    const linkAt = probe.log.findIndex((l) => l.includes('linkSync')) + 1;
    const target = real.layout.receipt('1'.repeat(64));
    expect(() =>
      publishExclusive(new Store(root, crashingFs(nodeFs, linkAt)), target, Buffer.from('x')),
    ).toThrow(expect.objectContaining({ code: 'ECRASH' }));
    const left = readdirSync(real.layout.tmp);
    expect(left).toHaveLength(1);
    // the crashed writer was this process; a temp file of ours only goes once it is old
    expect(sweepStaleTemps(real)).toBe(0);
    const past = new Date(Date.now() - 2 * 3_600_000);
    utimesSync(join(real.layout.tmp, left[0]!), past, past);
    expect(sweepStaleTemps(real)).toBe(1);
    expect(readdirSync(real.layout.tmp)).toEqual([]);
    expect(readdirSync(real.layout.dir('receipts'))).toEqual([`${'0'.repeat(64)}.json`]);
  });

  it('removes a fresh temp file whose writer process is gone, and keeps one whose writer is alive', () => {
    const store = new Store(freshRoot());
    writeFileSync(join(store.layout.tmp, '.tmp-999999999-1-deadbeef'), 'torn');
    writeFileSync(join(store.layout.dir('leases'), '.tmp-999999998-2-deadbeef'), 'torn');
    writeFileSync(join(store.layout.tmp, `.tmp-${process.ppid}-3-cafe`), 'in flight');
    writeFileSync(join(store.layout.tmp, 'not-a-temp'), 'kept');
    expect(sweepStaleTemps(store)).toBe(2);
    expect(readdirSync(store.layout.tmp).sort()).toEqual([`.tmp-${process.ppid}-3-cafe`, 'not-a-temp']);
    expect(readdirSync(store.layout.dir('leases'))).toEqual([]);
  });
});
