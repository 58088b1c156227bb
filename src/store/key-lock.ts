// A short per-key lock (.gen/locks/<name>.lock, an owned lock: lock-owner.ts) that serialises a worker's
// commit against the reaper for the same key. It narrows races; it does not decide them: a stale lock
// can be taken by two processes (moxystudio/node-proper-lockfile#121), so every commit re-checks the
// epoch under it, and verify/apply check the epoch again. A holder that died (kill -9) is known by its
// owner record, and its lock is taken over at once rather than after the 10 s staleness.
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';
import { type OwnedLock, takeOwnedLock } from './lock-owner.js';
import type { Store } from './store.js';

/** The owned lock, except that release never throws: a lock left behind is taken over once we are gone. */
export type HeldLock = OwnedLock;

export async function lockNamed(
  store: Store,
  name: string,
  opts: { waitMs?: number; staleMs?: number } = {},
): Promise<HeldLock> {
  const dir = join(store.layout.dir('locks'), `${name}.lock`);
  const lock = await takeOwnedLock(dir, { waitMs: opts.waitMs ?? 30_000, staleMs: opts.staleMs ?? 10_000 });
  if (!lock)
    throw new ConflictError(
      'EGJ_LOCKED',
      `${dir}: held by another genjob process; try again when it is done`,
    );
  const release = lock.release;
  lock.release = () => release().catch(() => {});
  return lock;
}

export async function withKeyLock<T>(
  store: Store,
  key: string,
  fn: (lock: HeldLock) => Promise<T> | T,
): Promise<T> {
  const lock = await lockNamed(store, `key-${key}`);
  try {
    return await fn(lock);
  } finally {
    await lock.release();
  }
}
