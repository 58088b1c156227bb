import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireApplyLock, applyLockFile, withApplyLock } from '../../src/apply/apply-lock.js';
import { ConflictError } from '../../src/core/errors.js';
import { Store } from '../../src/store/store.js';
import { removeTempDirs, tempDir } from './fixture.js';

afterEach(removeTempDirs);

const store = () => new Store(tempDir()).ensure();

describe('apply lock', () => {
  it('refuses a second holder with EGJ_LOCKED (exit 4) naming the lock file', async () => {
    const s = store();
    const first = await acquireApplyLock(s);
    const err = await acquireApplyLock(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).code).toBe('EGJ_LOCKED');
    expect((err as ConflictError).exitCode).toBe(4);
    expect((err as ConflictError).message).toContain(applyLockFile(s));
    expect(applyLockFile(s)).toMatch(/\.gen\/locks\/apply\.lock$/);
    await first.release();
    await (await acquireApplyLock(s)).release();
  });

  it('waits up to timeoutMs for the holder to finish', async () => {
    const s = store();
    const first = await acquireApplyLock(s);
    setTimeout(() => void first.release(), 200);
    const started = Date.now();
    // a limit far above the holder's 200 ms: a loaded machine only makes the wait longer
    await withApplyLock(s, { timeoutMs: 120_000 }, () => undefined);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it('records a compromised lock instead of throwing, and stops the next commit step', async () => {
    const s = store();
    const lock = await acquireApplyLock(s, { staleMs: 2_000, updateMs: 1_000 });
    expect(() => lock.assertHeld('step one')).not.toThrow();
    // someone else "takes" the stale lock: its mtime is no longer ours
    utimesSync(applyLockFile(s), new Date(0), new Date(0));
    // the lock's next update (every second) sees it; waited for, however late a loaded machine runs it
    while (lock.compromised === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lock.compromised).toBeInstanceOf(Error);
    expect(() => lock.assertHeld('publishing the record')).toThrow(
      /compromised.*stopped before publishing the record/,
    );
    await lock.release();
  });
});

describe('apply lock owner', () => {
  /** A pid that certainly ran and is gone now. */
  function deadPid(): number {
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    return Number(child.stdout.toString());
  }

  it('is taken over at once when the process recorded as its holder is gone', async () => {
    const s = store();
    const first = await acquireApplyLock(s, { staleMs: 60_000 });
    const owner = `${applyLockFile(s)}.owner`;
    const record = JSON.parse(readFileSync(owner, 'utf8'));
    expect(record).toMatchObject({ pid: process.pid, ino: statSync(applyLockFile(s)).ino });
    const dead = deadPid();
    writeFileSync(owner, JSON.stringify({ ...record, pid: dead }));
    // timeoutMs 0: without the owner-gone takeover this is EGJ_LOCKED at once (the lock is 60 s from stale)
    const second = await acquireApplyLock(s, { timeoutMs: 0 });
    expect(second.tookOverFrom).toMatchObject({ pid: dead }); // the owner-gone path
    await second.release();
    await first.release();
  });

  it('is not taken over while its holder runs, nor on a record that names another lock directory', async () => {
    const s = store();
    const first = await acquireApplyLock(s, { staleMs: 60_000 });
    const owner = `${applyLockFile(s)}.owner`;
    const record = JSON.parse(readFileSync(owner, 'utf8'));
    await expect(acquireApplyLock(s)).rejects.toMatchObject({ code: 'EGJ_LOCKED' });
    writeFileSync(owner, JSON.stringify({ ...record, pid: deadPid(), ino: record.ino + 1 }));
    await expect(acquireApplyLock(s)).rejects.toMatchObject({ code: 'EGJ_LOCKED' });
    await first.release();
  });

  it('reports a lock it could not remove as EGJ_IO, and the next apply takes it over at once', async () => {
    const s = store();
    const err = await withApplyLock(s, {}, () => {
      writeFileSync(join(applyLockFile(s), 'in-the-way'), ''); // rmdir of the lock now fails (ENOTEMPTY)
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EGJ_IO', exitCode: 5, errno: 'ENOTEMPTY' });
    expect((err as Error).message).toBe(
      `${applyLockFile(s)}: remove lock failed: directory not empty (ENOTEMPTY); the work under it is done, and the lock is taken over once this process is gone`,
    );
    // this process still runs, so make the record name a gone one, as after the failed apply exited
    const owner = `${applyLockFile(s)}.owner`;
    writeFileSync(owner, JSON.stringify({ ...JSON.parse(readFileSync(owner, 'utf8')), pid: deadPid() }));
    await (await acquireApplyLock(s, { timeoutMs: 0 })).release();
  });
});
