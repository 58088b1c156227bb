import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyJob } from '../../src/apply/apply-job.js';
import { acquireApplyLock } from '../../src/apply/apply-lock.js';
import { readApplied } from '../../src/apply/apply-records.js';
import { revertApplied } from '../../src/apply/revert.js';
import { TREE_TMP_PREFIX } from '../../src/apply/tree-file.js';
import { ConflictError, type GenjobError } from '../../src/core/errors.js';
import { nodeFs } from '../../src/store/fs-port.js';
import { readJournal } from '../../src/store/journal.js';
import { Store } from '../../src/store/store.js';
import { crashingFs, isCrash } from '../helpers/crashing-fs.js';
import { makeFixture, readOrNull, removeTempDirs, snapshot } from './fixture.js';

afterEach(removeTempDirs);

function applied() {
  return makeFixture({
    files: {
      'src/a.ts': { bytes: 'a = 1\n', mode: 0o600 },
      'bin/run.sh': { bytes: '#!/bin/sh\necho old\n', mode: 0o755 },
    },
    inputs: ['bin/run.sh', 'src/a.ts', 'src/new/b.ts'],
    outputs: { 'src/a.ts': 'a = 2\n', 'bin/run.sh': '#!/bin/sh\necho new\n', 'src/new/b.ts': 'b\n' },
  });
}

describe('revertApplied', () => {
  it('restores the exact bytes and modes the apply replaced and deletes the files it created', async () => {
    const f = applied();
    const beforeApply = snapshot(f.root, ['.gen']);
    await applyJob(f.v, {});
    const { reverted } = await revertApplied(f.v.store, f.v.job.key);
    expect(reverted.map((w) => w.path)).toEqual(['bin/run.sh', 'src/a.ts', 'src/new/b.ts']);
    for (const [path, bytes] of f.original) expect(readOrNull(f.root, path)).toEqual(bytes);
    expect(statSync(join(f.root, 'src/a.ts')).mode & 0o777).toBe(0o600);
    expect(statSync(join(f.root, 'bin/run.sh')).mode & 0o777).toBe(0o755);
    // the directory the apply made for src/new/b.ts is gone too: everything is as before the apply
    expect(snapshot(f.root, ['.gen'])).toEqual(beforeApply);
    expect(readJournal(f.v.store, f.v.job.key).map((e) => e.event)).toEqual(['applied', 'reverted']);
  });

  it('removes only the directories the apply made, and only while empty: an empty one that was there, and one holding a file put in it since, stay', async () => {
    const f = makeFixture({
      files: { 'a.txt': 'a\n' },
      inputs: ['docs/deep/x.md', 'keep/y.md', 'full/deeper/z.md'],
      outputs: { 'docs/deep/x.md': 'x\n', 'keep/y.md': 'y\n', 'full/deeper/z.md': 'z\n' },
    });
    mkdirSync(join(f.root, 'keep')); // the user's own empty directory
    const beforeApply = snapshot(f.root, ['.gen']);
    await applyJob(f.v, {});
    const record = readApplied(f.v.store, f.v.job.key)!;
    expect(record.created_dirs).toEqual(['docs', 'docs/deep', 'full', 'full/deeper']);
    writeFileSync(join(f.root, 'full/mine.txt'), 'mine\n'); // a file of someone else's in one of them
    await revertApplied(f.v.store, f.v.job.key);
    const after = snapshot(f.root, ['.gen']);
    expect(readOrNull(f.root, 'full/mine.txt')?.toString()).toBe('mine\n');
    expect(existsSync(join(f.root, 'full/deeper'))).toBe(false);
    expect(existsSync(join(f.root, 'keep'))).toBe(true);
    for (const key of after.keys())
      if (!key.startsWith('full')) expect(after.get(key)).toEqual(beforeApply.get(key));
    expect([...after.keys()].filter((k) => !k.startsWith('full')).sort()).toEqual(
      [...beforeApply.keys()].sort(),
    );
  });

  it('writes no created_dirs into the record of an apply that makes no directory', async () => {
    const f = makeFixture({
      files: { 'src/a.ts': 'a\n' },
      inputs: ['src/a.ts', 'src/b.ts'],
      outputs: { 'src/a.ts': 'a2\n', 'src/b.ts': 'b\n' },
    });
    await applyJob(f.v, {});
    expect(readApplied(f.v.store, f.v.job.key)).not.toHaveProperty('created_dirs');
  });

  it('refuses with a conflict and writes nothing when a target was edited after the apply', async () => {
    const f = applied();
    await applyJob(f.v, {});
    writeFileSync(join(f.root, 'src/new/b.ts'), 'my edit\n');
    const before = snapshot(f.root, ['.gen']);
    const err = await revertApplied(f.v.store, f.v.job.key).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).code).toBe('EGJ_STALE');
    expect((err as ConflictError).message).toContain('src/new/b.ts');
    expect(snapshot(f.root, ['.gen'])).toEqual(before);
  });

  it('writes nothing on a full disk: every restored file goes to a temp before the first is put back', async () => {
    const f = applied();
    await applyJob(f.v, {});
    const tree = snapshot(f.root, ['.gen']);
    let temps = 0;
    const full = new Store(f.root, {
      ...nodeFs,
      openSync: ((path: string, flags: number, mode?: number) => {
        if (String(path).includes(TREE_TMP_PREFIX) && ++temps === 2)
          throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC', errno: -28, syscall: 'open', path });
        return nodeFs.openSync(path, flags, mode);
      }) as typeof nodeFs.openSync,
    });
    const err = (await revertApplied(full, f.v.job.key).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/: open failed: no space left on device \(ENOSPC\); nothing was written$/);
    expect(snapshot(f.root, ['.gen'])).toEqual(tree);
    expect(existsSync(f.v.store.layout.jobFile('applied', f.v.job.key))).toBe(true);
    await revertApplied(f.v.store, f.v.job.key);
    for (const [path, bytes] of f.original) expect(readOrNull(f.root, path)).toEqual(bytes);
  });

  it('refuses and writes nothing when a backup object is missing', async () => {
    const f = applied();
    const out = await applyJob(f.v, {});
    rmSync(f.v.store.layout.object(out.writes.find((w) => w.path === 'src/a.ts')!.before!));
    const before = snapshot(f.root, ['.gen']);
    const err = await revertApplied(f.v.store, f.v.job.key).catch((e: unknown) => e);
    expect((err as GenjobError).code).toBe('EGJ_OBJECT_MISSING');
    expect(snapshot(f.root, ['.gen'])).toEqual(before);
  });

  it('reverts nothing the second time and says it already is reverted', async () => {
    const f = applied();
    await applyJob(f.v, {});
    expect(await revertApplied(f.v.store, f.v.job.key)).toMatchObject({ already: false });
    expect(await revertApplied(f.v.store, f.v.job.key)).toMatchObject({
      reverted: [],
      already: true,
      record: { key: f.v.job.key },
    });
  });

  it('moves the apply record from applied/ to reverted/ as its last step', async () => {
    const f = applied();
    await applyJob(f.v, {});
    const record = readFileSync(f.v.store.layout.jobFile('applied', f.v.job.key));
    await revertApplied(f.v.store, f.v.job.key);
    expect(existsSync(f.v.store.layout.jobFile('applied', f.v.job.key))).toBe(false);
    expect(readFileSync(f.v.store.layout.jobFile('reverted', f.v.job.key))).toEqual(record);
  });

  it('finishes a revert a crash stopped before the record moved', async () => {
    const f = applied();
    await applyJob(f.v, {});
    await revertApplied(f.v.store, f.v.job.key);
    const { applied: a, reverted: r } = {
      applied: f.v.store.layout.jobFile('applied', f.v.job.key),
      reverted: f.v.store.layout.jobFile('reverted', f.v.job.key),
    };
    renameSync(r, a); // the tree is reverted, the record not yet moved
    expect(await revertApplied(f.v.store, f.v.job.key)).toMatchObject({ reverted: [], already: false });
    expect(existsSync(a)).toBe(false);
    expect(existsSync(r)).toBe(true);
  });

  it('removes torn temp files a crash left next to the files it reverts', async () => {
    const f = applied();
    await applyJob(f.v, {});
    writeFileSync(join(f.root, 'src/new', `${TREE_TMP_PREFIX}torn`), 'half');
    writeFileSync(join(f.root, 'bin', `${TREE_TMP_PREFIX}torn`), 'half');
    await revertApplied(f.v.store, f.v.job.key);
    expect(existsSync(join(f.root, 'src/new'))).toBe(false); // swept, then removed as the apply made it
    expect(readdirSync(join(f.root, 'bin'))).toEqual(['run.sh']);
  });

  it('journals one reverted event with the key and the number of files it wrote back', async () => {
    const f = applied();
    await applyJob(f.v, {});
    writeFileSync(join(f.root, 'src/a.ts'), 'a = 1\n'); // already back to its before bytes: not counted
    await revertApplied(f.v.store, f.v.job.key);
    expect(readJournal(f.v.store, f.v.job.key).at(-1)).toMatchObject({
      event: 'reverted',
      key: f.v.job.key,
      writes: 2,
    });
  });

  it('waits up to lockTimeoutMs for an apply holding the lock, then reverts', async () => {
    const f = applied();
    await applyJob(f.v, {});
    const held = await acquireApplyLock(f.v.store);
    setTimeout(() => void held.release(), 300);
    // a limit far above the holder's 300 ms: a loaded machine only makes the wait longer
    const out = await revertApplied(f.v.store, f.v.job.key, { lockTimeoutMs: 120_000 });
    expect(out.reverted).toHaveLength(3);
  });

  it('reverts a job applied again after a revert, even when a crash left its old reverted record behind', async () => {
    const f = applied();
    const { store } = f.v;
    const key = f.v.job.key;
    await applyJob(f.v, {});
    await revertApplied(store, key);
    const oldReverted = `${store.root}/old-reverted.json`;
    copyFileSync(store.layout.jobFile('reverted', key), oldReverted);
    await applyJob(f.v, {});
    // the crash: applied/ published again, reverted/ not yet removed
    copyFileSync(oldReverted, store.layout.jobFile('reverted', key));
    rmSync(oldReverted);
    expect((await revertApplied(store, key)).reverted).toHaveLength(3);
    for (const [path, bytes] of f.original) expect(readOrNull(f.root, path)).toEqual(bytes);
  });

  it('makes reverted/ when a .gen/ made by an earlier genjob has none', async () => {
    const f = applied();
    await applyJob(f.v, {});
    rmdirSync(f.v.store.layout.dir('reverted'));
    await revertApplied(f.v.store, f.v.job.key);
    expect(existsSync(f.v.store.layout.jobFile('reverted', f.v.job.key))).toBe(true);
  });

  it('says EGJ_NOT_APPLIED for a key that was never applied', async () => {
    const f = applied();
    const err = await revertApplied(f.v.store, f.v.job.key).catch((e: unknown) => e);
    expect((err as GenjobError).code).toBe('EGJ_NOT_APPLIED');
    expect((err as GenjobError).exitCode).toBe(2);
  });

  it('is finished by a second revert, whichever mutating call a crash hits', async () => {
    const probe = applied();
    await applyJob(probe.v, {});
    const counter = crashingFs(nodeFs, Number.POSITIVE_INFINITY);
    await revertApplied(new Store(probe.root, counter), probe.v.job.key);
    const total = counter.mutations;
    expect(total).toBeGreaterThan(10);
    const finalTree = snapshot(probe.root, ['.gen']);
    for (let n = 1; n <= total; n++) {
      const f = applied();
      await applyJob(f.v, {});
      const fs = crashingFs(nodeFs, n);
      const err = await revertApplied(new Store(f.root, fs), f.v.job.key).catch((e: unknown) => e);
      const where = `crash #${n} at ${fs.log.at(-1)}`;
      expect(isCrash(err), where).toBe(true);
      for (const [path, bytes] of f.original) {
        expect([bytes, f.expected.get(path)], `${where}: ${path} torn`).toContainEqual(
          readOrNull(f.root, path),
        );
      }
      await revertApplied(f.v.store, f.v.job.key);
      for (const [path, bytes] of f.original) expect(readOrNull(f.root, path), where).toEqual(bytes);
      expect(snapshot(f.root, ['.gen']), where).toEqual(finalTree);
      removeTempDirs();
    }
  });
});
