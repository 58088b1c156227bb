// The apply lock: one writer per repository (.gen/locks/apply.lock, an owned lock: lock-owner.ts; stale
// after ~10 s, refreshed while held). A held lock is EGJ_LOCKED (exit 4). The lock only narrows races: a
// stale lock can be taken by two processes (moxystudio/node-proper-lockfile#121), so apply re-checks the
// state right before each commit step, and a compromise (recorded, never thrown from a timer: see
// node-proper-lockfile#11 and #81; or seen at the step itself: the lock directory gone or another in its
// place) stops the next step. A lock whose owner died is taken over at once; a lock that cannot be removed
// at the end is reported (EGJ_IO), not ignored.
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';
import { type OwnedLock, takeOwnedLock } from '../store/lock-owner.js';
import type { Store } from '../store/store.js';

export interface ApplyLock extends OwnedLock {
  /** Throw EGJ_LOCK_LOST if the lock was compromised; call before every commit step. */
  assertHeld(step: string): void;
}

export interface ApplyLockOptions {
  /** How long to wait for a held lock before EGJ_LOCKED (default 0: fail at once). */
  timeoutMs?: number;
  /** Age after which a lock nobody refreshes is stale (default 10 s; proper-lockfile's minimum is 2 s). */
  staleMs?: number;
  /** How often the holder refreshes the lock (default staleMs / 2; minimum 1 s). */
  updateMs?: number;
}

export function applyLockFile(store: Store): string {
  return join(store.layout.dir('locks'), 'apply.lock');
}

export async function acquireApplyLock(store: Store, opts: ApplyLockOptions = {}): Promise<ApplyLock> {
  const file = applyLockFile(store);
  const lock = await takeOwnedLock(file, {
    waitMs: opts.timeoutMs ?? 0,
    staleMs: opts.staleMs ?? 10_000,
    updateMs: opts.updateMs,
  });
  if (!lock)
    throw new ConflictError('EGJ_LOCKED', `${file}: held by another genjob apply; try again when it is done`);
  return Object.assign(lock, {
    assertHeld(step: string) {
      // apply's steps run synchronously, so proper-lockfile's refresh timer (which reports a compromise)
      // cannot run between them: look at the lock directory itself, whose inode changes when it is taken
      const compromised = lock.lost();
      if (compromised === undefined) return;
      throw new ConflictError(
        'EGJ_LOCK_LOST',
        `${file}: the apply lock was compromised (${compromised.message}); stopped before ${step}. ` +
          'Run `genjob apply` again: it re-checks the tree and finishes from the write-ahead record',
        { cause: compromised },
      );
    },
  });
}

export async function withApplyLock<T>(
  store: Store,
  opts: ApplyLockOptions,
  fn: (lock: ApplyLock) => Promise<T> | T,
): Promise<T> {
  const lock = await acquireApplyLock(store, opts);
  try {
    return await fn(lock);
  } finally {
    await lock.release();
  }
}
