// Fault injection: crash a 4-file apply (two files in one directory, one in a new directory) at every one of
// its mutating filesystem calls, then recover. A crash model cannot see a missing fsync, so the order of the
// fsyncs the batches rely on is checked separately, on a recorded trace.
import { constants, existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyJob, recoverInterruptedApplies } from '../../src/apply/apply-job.js';
import { readApplied } from '../../src/apply/apply-records.js';
import { type FsPort, nodeFs } from '../../src/store/fs-port.js';
import { readJournal } from '../../src/store/journal.js';
import { crashingFs, isCrash } from '../helpers/crashing-fs.js';
import { makeFixture, readOrNull, removeTempDirs, snapshot } from './fixture.js';

afterEach(removeTempDirs);

function fourFiles() {
  return makeFixture({
    files: {
      'src/a.ts': { bytes: 'export const a = 1;\n'.repeat(50), mode: 0o644 },
      'src/c.ts': { bytes: 'export const c = 1;\n', mode: 0o600 },
      'bin/run.sh': { bytes: '#!/bin/sh\necho old\n', mode: 0o755 },
    },
    inputs: ['bin/run.sh', 'src/a.ts', 'src/c.ts', 'src/new/b.ts'],
    outputs: {
      'src/a.ts': 'export const a = 2;\n'.repeat(60),
      'src/c.ts': 'export const c = 2;\n',
      'bin/run.sh': '#!/bin/sh\necho new\n',
      'src/new/b.ts': 'export const b = 1;\n',
    },
  });
}

describe('applyJob under crashes', () => {
  it('leaves every file whole and is finished by the next run, whichever mutating call the crash hits', async () => {
    const probe = fourFiles();
    const counter = crashingFs(nodeFs, Number.POSITIVE_INFINITY);
    expect((await applyJob(probe.withFs(counter), {})).status).toBe('applied');
    const total = counter.mutations;
    const finalTree = snapshot(probe.root, ['.gen']);
    expect(total).toBeGreaterThan(20);

    for (let n = 1; n <= total; n++) {
      const f = fourFiles();
      const { store, job } = f.v;
      const fs = crashingFs(nodeFs, n);
      const err = await applyJob(f.withFs(fs), {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      const where = `crash #${n} at ${fs.log.at(-1)}`;
      expect(isCrash(err), `${where}: ${String(err)}`).toBe(true);
      for (const [path, after] of f.expected) {
        expect([f.original.get(path), after], `${where}: ${path} is torn`).toContainEqual(
          readOrNull(f.root, path),
        );
      }

      // the next run finishes it: recover on odd crashes, a plain apply on even ones
      if (n % 2 === 1) await recoverInterruptedApplies(store, { vouch: async () => f.v });
      const next = await applyJob(f.v, {});
      expect(['applied', 'already-applied'], where).toContain(next.status);

      expect(snapshot(f.root, ['.gen']), where).toEqual(finalTree);
      expect(readdirSync(store.layout.dir('applied')), where).toEqual([`${job.key}.json`]);
      expect(readdirSync(store.layout.dir('applying')), where).toEqual([]);
      expect(existsSync(store.layout.jobFile('received', job.key)), where).toBe(false);
      expect(await applyJob(f.v, {}), where).toMatchObject({ status: 'already-applied' });
      // the apply journalled once, whether the crash came before its line, in it, or after it
      const lines = readJournal(store, job.key).filter((e) => e.event === 'applied');
      expect(lines, where).toHaveLength(1);
      expect(lines[0]!.applied_at, where).toBe(readApplied(store, job.key)!.applied_at);
      removeTempDirs();
    }
  });
});

/** An FsPort that records, in order, each fsync (of the path its fd was opened with) and each link, rename, mkdir. */
function recordingFs() {
  const events: Array<{ op: string; path: string; from?: string; dir?: boolean }> = [];
  const open = new Map<number, { path: string; dir: boolean }>();
  const fs: FsPort = {
    ...nodeFs,
    openSync: ((path: string, flags: number, mode?: number) => {
      const fd = nodeFs.openSync(path, flags, mode);
      open.set(fd, { path, dir: (flags & constants.O_DIRECTORY) !== 0 });
      return fd;
    }) as FsPort['openSync'],
    fsyncSync(fd: number) {
      nodeFs.fsyncSync(fd);
      const file = open.get(fd);
      events.push({ op: 'fsync', path: file?.path ?? `fd ${fd}`, dir: file?.dir === true });
    },
    linkSync(from, to) {
      nodeFs.linkSync(from, to);
      events.push({ op: 'link', path: String(to), from: String(from) });
    },
    renameSync(from, to) {
      nodeFs.renameSync(from, to);
      events.push({ op: 'rename', path: String(to), from: String(from) });
    },
    mkdirSync: ((path: string, opts?: { mode?: number }) => {
      const made = nodeFs.mkdirSync(path, opts);
      events.push({ op: 'mkdir', path });
      return made;
    }) as FsPort['mkdirSync'],
  };
  return { fs, events };
}

describe('applyJob fsync order', () => {
  it('fsyncs objects/ once before the write-ahead record, and each directory once after its renames', async () => {
    const f = fourFiles();
    const { store, job } = f.v;
    const { fs, events } = recordingFs();
    expect((await applyJob(f.withFs(fs), {})).status).toBe('applied');

    const at = (pred: (e: (typeof events)[number]) => boolean) => events.findIndex(pred);
    const lastAt = (pred: (e: (typeof events)[number]) => boolean) => events.findLastIndex(pred);
    const fsyncsOf = (dir: string) =>
      events.flatMap((e, i) => (e.op === 'fsync' && e.path === dir ? [i] : []));
    const wal = at((e) => e.op === 'link' && e.path === store.layout.applying(job.key));
    const done = at((e) => e.op === 'link' && e.path === store.layout.jobFile('applied', job.key));
    expect(wal).toBeGreaterThan(0);
    expect(done).toBeGreaterThan(wal);

    // objects/: 7 objects (4 after, 3 before), every temp fsynced before its link, one directory fsync
    const objects = store.layout.dir('objects');
    const objectLinks = events.flatMap((e, i) => (e.op === 'link' && dirname(e.path) === objects ? [i] : []));
    expect(objectLinks).toHaveLength(7);
    for (const i of objectLinks)
      expect(at((e) => e.op === 'fsync' && e.path === events[i]!.from)).toBeLessThan(i);
    expect(fsyncsOf(objects)).toEqual([expect.any(Number)]);
    expect(fsyncsOf(objects)[0]).toBeGreaterThan(Math.max(...objectLinks));
    expect(fsyncsOf(objects)[0]).toBeLessThan(wal);

    // the tree: every temp fsynced before its rename or link; each directory fsynced once after its last one
    // (src/ twice: once for the new directory src/new made in it, before src/new/b.ts is linked)
    const table = [
      { dir: 'bin', files: 1, fsyncs: 1 },
      { dir: 'src', files: 2, fsyncs: 2 },
      { dir: 'src/new', files: 1, fsyncs: 1 },
    ];
    for (const { dir, files, fsyncs } of table) {
      const abs = join(f.root, dir);
      const commits = events.flatMap((e, i) =>
        (e.op === 'rename' || e.op === 'link') && dirname(e.path) === abs ? [i] : [],
      );
      expect(commits, dir).toHaveLength(files);
      for (const i of commits) {
        expect(at((e) => e.op === 'fsync' && e.path === events[i]!.from)).toBeGreaterThan(wal);
        expect(at((e) => e.op === 'fsync' && e.path === events[i]!.from)).toBeLessThan(i);
      }
      expect(fsyncsOf(abs), dir).toHaveLength(fsyncs);
      expect(lastAt((e) => e.op === 'fsync' && e.path === abs)).toBeGreaterThan(Math.max(...commits));
      expect(lastAt((e) => e.op === 'fsync' && e.path === abs)).toBeLessThan(done);
    }
    const mkdir = at((e) => e.op === 'mkdir' && e.path === join(f.root, 'src/new'));
    const newFile = at((e) => e.op === 'link' && e.path === join(f.root, 'src/new/b.ts'));
    expect(fsyncsOf(join(f.root, 'src')).some((i) => i > mkdir && i < newFile)).toBe(true);
  });

  it('does not fsync a directory more often when it holds more files', async () => {
    const dirFsyncs = async (n: number) => {
      const names = Array.from({ length: n }, (_, i) => `src/f${i}.txt`);
      const f = makeFixture({
        files: Object.fromEntries(names.map((p) => [p, `old ${p}\n`])),
        inputs: names,
        outputs: Object.fromEntries(names.map((p) => [p, `new ${p}\n`])),
      });
      const { fs, events } = recordingFs();
      await applyJob(f.withFs(fs), {});
      const fsyncs = events.filter((e) => e.op === 'fsync');
      const dirs = fsyncs.filter((e) => e.dir);
      return { files: fsyncs.length - dirs.length, dirs: dirs.length };
    };
    const two = await dirFsyncs(2);
    const twenty = await dirFsyncs(20);
    expect(twenty.dirs).toBe(two.dirs);
    // per file: the before object, the after object and the temp in the tree
    expect(twenty.files - two.files).toBe(3 * 18);
  });
});
