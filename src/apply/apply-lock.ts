// The apply lock: one writer per repository (proper-lockfile on .gen/locks/apply.lock, stale after ~10 s,
// refreshed while held). A held lock is EGJ_LOCKED (exit 4). The lock only narrows races: a stale lock can
// be taken by two processes (moxystudio/node-proper-lockfile#121), so apply re-checks the state right before
// each commit step, and a compromise is recorded (never thrown from a timer, #11/#81) and stops the next step.
// The holder is recorded beside the lock (lock-owner.ts), so a lock whose owner died is taken over at once;
// a lock that cannot be removed at the end is reported (EGJ_IO), not ignored.
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { isSystemError } from '../core/errno.js';
import { ConflictError, errnoOf, IoError } from '../core/errors.js';
import { dropOwner, recordOwner, takeOverIfOwnerGone } from '../store/lock-owner.js';
import type { Store } from '../store/store.js';

export interface ApplyLock {
  /** The lock directory proper-lockfile creates. */
  readonly file: string;
  /** Set once proper-lockfile reports the lock compromised (its refresh failed or someone else took it). */
  readonly compromised: Error | undefined;
  /** Throw EGJ_LOCK_LOST if the lock was compromised; call before every commit step. */
  assertHeld(step: string): void;
  release(): Promise<void>;
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function acquireApplyLock(store: Store, opts: ApplyLockOptions = {}): Promise<ApplyLock> {
  const file = applyLockFile(store);
  const deadline = Date.now() + Math.max(0, opts.timeoutMs ?? 0);
  let compromised: Error | undefined;
  for (;;) {
    try {
      const release = await lockfile.lock(store.root, {
        realpath: false,
        lockfilePath: file,
        stale: opts.staleMs ?? 10_000,
        update: opts.updateMs,
        retries: 0,
        onCompromised: (err) => {
          compromised = err;
        },
      });
      try {
        recordOwner(file);
      } catch (err) {
        await release().catch(() => {});
        throw err;
      }
      return {
        file,
        get compromised() {
          return compromised;
        },
        assertHeld(step: string) {
          if (compromised === undefined) return;
          throw new ConflictError(
            'EGJ_LOCK_LOST',
            `${file}: the apply lock was compromised (${compromised.message}); stopped before ${step}. ` +
              'Run `genjob apply` again: it re-checks the tree and finishes from the write-ahead record',
            { cause: compromised },
          );
        },
        async release() {
          await release().catch((err: unknown) => {
            // already released or compromised: nothing of ours is left to remove; anything else is reported,
            // and our owner record stays, so the next apply sees this process gone and takes the lock over
            if (compromised === undefined && isSystemError(err))
              throw IoError.wrap(
                'remove lock (the work under it is done; the next apply takes the lock over)',
                file,
                err,
              );
          });
          dropOwner(file);
        },
      };
    } catch (err) {
      if (errnoOf(err) !== 'ELOCKED')
        throw isSystemError(err) ? IoError.wrap('lock (mkdir)', file, err) : err;
      if (takeOverIfOwnerGone(file)) continue;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new ConflictError(
          'EGJ_LOCKED',
          `${file}: held by another genjob apply; try again when it is done`,
          {
            cause: err,
          },
        );
      }
      await sleep(Math.min(50, left));
    }
  }
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
