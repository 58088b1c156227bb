// A short per-key lock (proper-lockfile on .gen/locks/<name>.lock) that serialises a worker's
// commit against the reaper for the same key. It narrows races; it does not decide them:
// a stale lock can be taken by two processes (moxystudio/node-proper-lockfile#121), so every
// commit re-checks the epoch under it, and verify/apply check the epoch again.
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { isSystemError } from '../core/errno.js';
import { ConflictError, errnoOf, IoError } from '../core/errors.js';
import type { Store } from './store.js';

export interface HeldLock {
  /** True once proper-lockfile reported the lock compromised (its mtime updates failed). */
  compromised: boolean;
  release(): Promise<void>;
}

export async function lockNamed(
  store: Store,
  name: string,
  opts: { waitMs?: number; staleMs?: number } = {},
): Promise<HeldLock> {
  const path = join(store.layout.dir('locks'), name);
  const held: HeldLock = { compromised: false, release: async () => {} };
  const waitMs = opts.waitMs ?? 30_000;
  try {
    const release = await lockfile.lock(path, {
      realpath: false,
      lockfilePath: `${path}.lock`,
      stale: opts.staleMs ?? 10_000,
      retries: {
        retries: Math.max(1, Math.ceil(waitMs / 100)),
        minTimeout: 20,
        maxTimeout: 100,
        factor: 1.3,
      },
      // The default handler throws inside a timer and kills the process (#11, #81): record instead.
      onCompromised: () => {
        held.compromised = true;
      },
    });
    held.release = async () => {
      await release().catch(() => {});
    };
  } catch (err) {
    if (errnoOf(err) === 'ELOCKED') {
      throw new ConflictError(
        'EGJ_LOCKED',
        `${path}.lock: held by another genjob process; try again when it is done`,
        {
          cause: err,
        },
      );
    }
    throw isSystemError(err) ? IoError.wrap('lock (mkdir)', `${path}.lock`, err) : err;
  }
  return held;
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
