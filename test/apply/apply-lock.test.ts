import { utimesSync } from 'node:fs';
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
    await withApplyLock(s, { timeoutMs: 5_000 }, () => undefined);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it('records a compromised lock instead of throwing, and stops the next commit step', async () => {
    const s = store();
    const lock = await acquireApplyLock(s, { staleMs: 2_000, updateMs: 1_000 });
    expect(() => lock.assertHeld('step one')).not.toThrow();
    // someone else "takes" the stale lock: its mtime is no longer ours
    utimesSync(applyLockFile(s), new Date(0), new Date(0));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(lock.compromised).toBeInstanceOf(Error);
    expect(() => lock.assertHeld('publishing the record')).toThrow(
      /compromised.*stopped before publishing the record/,
    );
    await lock.release();
  });
});
