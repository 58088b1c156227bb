// The owned lock every genjob lock uses (the apply lock, the per-key and batch locks, the host result
// cache's entry locks): a proper-lockfile lock directory plus `<lock>.owner` beside it, recording the
// holder's host, pid and start time and the lock directory's inode. A lock whose recorded holder is
// certainly gone (this host, pid dead or reused) is taken over at once instead of after proper-lockfile's
// staleness; one held from another host (.gen/ may be shared over a network filesystem) is only ever
// taken by staleness. The inode ties the record to one lock directory, so a record left by an earlier
// holder never condemns a newer lock. The lock only narrows races: a stale lock can be taken by two
// processes (moxystudio/node-proper-lockfile#121), so what it guards is re-checked by its users.
// Like the lock directory itself (made by proper-lockfile), the record goes through node:fs, not store.fs.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import lockfile from 'proper-lockfile';
import { isSystemError } from '../core/errno.js';
import { errnoOf, IoError } from '../core/errors.js';
import { replaceFile } from './durable.js';
import { nodeFs as fs } from './fs-port.js';
import { ownerGone, type ProcessId, thisProcess } from './process-identity.js';

export interface OwnedLockOptions {
  /** How long to wait while a live process holds the lock (0: one try). */
  waitMs: number;
  /** Age after which a lock nobody refreshes is stale (proper-lockfile's minimum is 2 s). */
  staleMs: number;
  /** How often the holder refreshes the lock (default staleMs / 2; minimum 1 s). */
  updateMs?: number;
}

export interface OwnedLock {
  /** The lock directory. */
  readonly dir: string;
  /** The recorded holder whose death let this lock be taken at once; undefined when it was free or stale. */
  readonly tookOverFrom: ProcessId | undefined;
  /** Set once proper-lockfile reports the lock compromised (its refresh failed or someone else took it). */
  readonly compromised: Error | undefined;
  /**
   * Drop the owner record (best effort), then remove the lock. A lock directory that cannot be removed is thrown as
   * EGJ_IO (never after a compromise: nothing of ours is left), with the record written again so the
   * next taker takes the lock over once this process is gone.
   */
  release(): Promise<void>;
}

interface OwnerRecord extends ProcessId {
  ino: number;
}

const POLL_MS = 50;
const ownerFile = (lockDir: string) => `${lockDir}.owner`;

/**
 * Take the lock directory `lockDir`, or undefined when a live holder still has it after `waitMs`.
 * A failure to make the lock or record its owner is EGJ_IO.
 */
export async function takeOwnedLock(lockDir: string, opts: OwnedLockOptions): Promise<OwnedLock | undefined> {
  const deadline = Date.now() + Math.max(0, opts.waitMs);
  let tookOverFrom: OwnerRecord | undefined;
  for (;;) {
    let compromised: Error | undefined;
    let release: () => Promise<void>;
    try {
      release = await lockfile.lock(lockDir, {
        realpath: false,
        lockfilePath: lockDir,
        stale: opts.staleMs,
        update: opts.updateMs,
        retries: 0,
        // the default handler throws inside a timer and kills the process (#11, #81): record instead
        onCompromised: (err) => {
          compromised = err;
        },
      });
    } catch (err) {
      if (errnoOf(err) !== 'ELOCKED') throw wrap('lock (mkdir)', lockDir, err);
      const gone = takeOverIfOwnerGone(lockDir);
      if (gone) {
        tookOverFrom = gone;
        continue;
      }
      tookOverFrom = undefined; // a takeover another process won does not count
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await sleep(Math.min(POLL_MS, left));
      continue;
    }
    try {
      recordOwner(lockDir);
    } catch (err) {
      await release().catch(() => {});
      throw wrap('record lock owner', ownerFile(lockDir), err);
    }
    const from = tookOverFrom && {
      host: tookOverFrom.host,
      pid: tookOverFrom.pid,
      start: tookOverFrom.start,
    };
    return {
      dir: lockDir,
      tookOverFrom: from,
      get compromised() {
        return compromised;
      },
      async release() {
        // the record goes first: once the lock is gone a new holder's record must not be removed by us
        if (compromised === undefined) {
          try {
            fs.rmSync(ownerFile(lockDir), { force: true });
          } catch {
            // a record left behind is tied to this lock's inode, and the next holder replaces it
          }
        }
        await release().catch((err: unknown) => {
          // already released or compromised: nothing of ours is left to remove
          if (compromised !== undefined || !isSystemError(err)) return;
          try {
            recordOwner(lockDir);
          } catch {
            // without a record the lock goes by proper-lockfile's staleness
          }
          throw wrap(
            'remove lock (the work under it is done; it is taken over once this process is gone)',
            lockDir,
            err,
          );
        });
      },
    };
  }
}

function wrap(op: string, file: string, err: unknown): unknown {
  return isSystemError(err) ? IoError.wrap(op, file, err) : err;
}

/** Record this process as the holder of the lock directory `lockDir` (EGJ_IO when it cannot be written). */
function recordOwner(lockDir: string): void {
  const record: OwnerRecord = { ...thisProcess(), ino: fs.lstatSync(lockDir).ino };
  replaceFile({ fs }, ownerFile(lockDir), Buffer.from(`${JSON.stringify(record)}\n`));
}

/** When the holder recorded for `lockDir` is certainly gone, remove the lock and return that holder. */
function takeOverIfOwnerGone(lockDir: string): OwnerRecord | undefined {
  let owner: OwnerRecord;
  let ino: number;
  try {
    owner = JSON.parse(fs.readFileSync(ownerFile(lockDir), 'utf8')) as OwnerRecord;
    ino = fs.lstatSync(lockDir).ino;
    if (ino !== owner.ino || !ownerGone(owner)) return undefined;
  } catch {
    return undefined; // no record (an older genjob, or a holder that died before writing it): staleness decides
  }
  // move it aside first so two takers cannot remove each other's fresh lock
  const aside = join(lockDir, '..', `.taken-${process.pid}-${Date.now()}`);
  try {
    fs.renameSync(lockDir, aside);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return owner; // another taker removed it: try to take it
    throw wrap('take over lock (rename)', lockDir, err);
  }
  // the record is removed only while it still names the directory set aside (no new lock can have its inode)
  dropRecordOf(lockDir, ino);
  try {
    fs.rmSync(aside, { recursive: true, force: true });
  } catch (err) {
    throw wrap('take over lock (remove)', aside, err);
  }
  return owner;
}

function dropRecordOf(lockDir: string, ino: number): void {
  try {
    const record = JSON.parse(fs.readFileSync(ownerFile(lockDir), 'utf8')) as OwnerRecord;
    if (record.ino === ino) fs.rmSync(ownerFile(lockDir), { force: true });
  } catch {
    // gone already, or being replaced by the next holder: theirs stands
  }
}
