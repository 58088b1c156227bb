// The owned lock every genjob lock uses (the apply lock, the per-key and batch locks, the host result
// cache's entry locks): a proper-lockfile lock directory plus `<lock>.owner` beside it, recording the
// holder's host, pid and start time and the lock directory's inode. A lock whose recorded holder is
// certainly gone (this host, pid dead or reused) is taken over at once instead of after proper-lockfile's
// staleness; one held from another host (.gen/ may be shared over a network filesystem) is only ever
// taken by staleness. The inode ties the record to one lock directory, so a record left by an earlier
// holder never condemns a newer lock. The lock only narrows races: a stale lock can be taken by two
// processes (moxystudio/node-proper-lockfile#121), so what it guards is re-checked by its users.
// The record can only be written after the lock directory exists, so a taker first leaves an intent
// (lock-intents.ts) and keeps it until its record is written (or its attempt failed): a lock with no
// record whose only intents, made before the lock directory was born, are of processes of this host
// that are gone was made by one of them, killed before it could record itself, and is taken over at
// once too. Like the lock directory itself (made by proper-lockfile), the record goes through node:fs,
// not store.fs.

import type { PathLike } from 'node:fs';
import * as callbackFs from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isSystemError } from '../core/errno.js';
import { errnoOf, IoError } from '../core/errors.js';
import { replaceAdvisory } from './durable.js';
import { nodeFs as fs } from './fs-port.js';
import {
  dropGoneTakers,
  dropIntent,
  type Intent,
  intentFile,
  intentsOf,
  readLockRecord,
  sweepDeadIntents,
  tryWriteIntent,
} from './lock-intents.js';
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
   * Why the lock is no longer this process's, looked at now: compromised, or its directory gone or another
   * in its place (a taker that judged it stale). proper-lockfile only notices at its next refresh, which
   * never runs while synchronous steps hold the event loop. Undefined while it is ours.
   */
  lost(): Error | undefined;
  /**
   * Drop the owner record (best effort), then remove the lock. A lock that is no longer ours is left to
   * its new holder, record and directory. A lock directory that cannot be removed is thrown as EGJ_IO
   * (never after a compromise: nothing of ours is left), with the record written again so the next taker
   * takes the lock over once this process is gone.
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
 * A failure to make the lock is EGJ_IO; its intent and owner record are best effort (a full disk).
 */
export async function takeOwnedLock(lockDir: string, opts: OwnedLockOptions): Promise<OwnedLock | undefined> {
  // loaded here, not with the module: every writing command sweeps dead locks (below) at start, and
  // proper-lockfile brings graceful-fs, which patches fs as it loads (~10 ms of a command that takes no lock)
  const { default: lockfile } = await import('proper-lockfile');
  const deadline = Date.now() + Math.max(0, opts.waitMs);
  let tookOverFrom: OwnerRecord | undefined;
  const intent = intentFile(lockDir);
  for (;;) {
    let compromised: Error | undefined;
    let release: () => Promise<void>;
    let ino: number | undefined;
    try {
      tryWriteIntent(intent);
      release = await lockfile.lock(lockDir, {
        realpath: false,
        lockfilePath: lockDir,
        stale: opts.staleMs,
        // its release (and its exit handler) must not remove a lock directory another process made
        fs: sparingTheirs(() => ino),
        update: opts.updateMs,
        retries: 0,
        // the default handler throws inside a timer and kills the process: record the loss instead,
        // so the next step that checks the lock stops
        onCompromised: (err) => {
          compromised = err;
        },
      });
    } catch (err) {
      dropIntent(intent);
      // the intent's write (EGJ_IO already), or proper-lockfile's mkdir, rmdir of a stale lock, or the utime
      // with which it probes the new lock's mtime precision
      if (errnoOf(err) !== 'ELOCKED')
        throw isSystemError(err)
          ? IoError.wrap(`lock (${(err as NodeJS.ErrnoException).syscall})`, lockDir, err)
          : err;
      const gone = takeOverIfOwnerGone(lockDir) ?? takeOverIfTakerGone(lockDir);
      if (gone) {
        tookOverFrom = gone;
        continue;
      }
      tookOverFrom = undefined; // a takeover another process won does not count
      const left = deadline - Date.now();
      // Stryker disable next-line EqualityOperator: at exactly 0 ms left, one more try after a 0 ms sleep decides the same
      if (left <= 0) return undefined;
      await sleep(Math.min(POLL_MS, left));
      continue;
    }
    try {
      ino = fs.lstatSync(lockDir).ino;
    } catch (err) {
      await release().catch(() => {});
      dropIntent(intent);
      throw err; // EGJ_IO from the named fs, naming the call and the file
    }
    // best effort, like the intent: on a full disk the lock is held all the same (a worker must still be
    // able to put its job back), and without a record a holder that dies is known only by staleness
    tryRecordOwner(lockDir, ino);
    dropIntent(intent);
    dropGoneTakers(lockDir);
    const mine = ino;
    const lost = () => compromised ?? takenFrom(lockDir, mine);
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
      lost,
      async release() {
        // the record goes first: once the lock is gone a new holder's record must not be removed by us
        let gone: Error | undefined;
        try {
          gone = lost();
        } catch {
          // cannot look: release as if ours (the directory removal below names the error)
        }
        if (gone === undefined) {
          try {
            // Stryker disable next-line ObjectLiteral,BooleanLiteral: while we hold the lock its record is there
            fs.rmSync(ownerFile(lockDir), { force: true });
          } catch {
            // a record left behind is tied to this lock's inode, and the next holder replaces it
          }
        }
        await release().catch((err: unknown) => {
          // already released or compromised (proper-lockfile's ERELEASED): nothing of ours is left to remove.
          // A lock no longer ours never gets here: its directory is spared (sparingTheirs) or already gone.
          if (!isSystemError(err)) return;
          tryRecordOwner(lockDir, mine); // without a record the lock goes by proper-lockfile's staleness
          throw IoError.wrap(
            'remove lock',
            lockDir,
            err,
            'the work under it is done, and the lock is taken over once this process is gone',
          );
        });
      },
    };
  }
}

/** Why the lock directory `lockDir` of inode `ino` is no longer ours; undefined while it is (EGJ_IO: cannot look). */
function takenFrom(lockDir: string, ino: number): Error | undefined {
  let now: number;
  try {
    now = fs.lstatSync(lockDir).ino;
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err; // EGJ_IO from the named fs
    return new Error('the lock directory was removed by another process');
  }
  return now === ino ? undefined : new Error('another process took the lock over');
}

/**
 * The fs proper-lockfile works through, except that removing the lock directory once it holds another
 * inode than ours (`ino()`; undefined before ours is known) does nothing: it is another holder's lock.
 */
export function sparingTheirs(ino: () => number | undefined) {
  const theirs = (path: PathLike) => {
    const mine = ino();
    if (mine === undefined) return false;
    let now: number;
    try {
      now = callbackFs.lstatSync(path).ino;
    } catch {
      return false; // gone: the removal says so
    }
    return now !== mine;
  };
  return {
    ...callbackFs,
    rmdir(path: PathLike, done: (err: NodeJS.ErrnoException | null) => void) {
      if (theirs(path)) return done(null);
      callbackFs.rmdir(path, (err) => {
        // taking a stale lock (ours not yet made): genjob's lock directories stay empty, so one with files
        // in it was made by something else (a branch may commit .gen/locks/<name>.lock/keep) and is
        // removed whole, set aside first. Releasing ours, a file in it stays a failure to report.
        if (err?.code !== 'ENOTEMPTY' || ino() !== undefined) return done(err);
        try {
          removeLock(String(path));
          done(null);
        } catch (e) {
          done(e as NodeJS.ErrnoException);
        }
      });
    },
    rmdirSync(path: PathLike) {
      if (!theirs(path)) callbackFs.rmdirSync(path);
    },
  };
}

/**
 * Record this process as the holder of the lock directory `lockDir` of inode `ino`, if the disk lets it.
 * Not fsynced: a record a crash loses or tears reads as none (judged by intent, else staleness).
 */
function tryRecordOwner(lockDir: string, ino: number): void {
  const record: OwnerRecord = { ...thisProcess(), ino };
  try {
    replaceAdvisory({ fs }, ownerFile(lockDir), Buffer.from(`${JSON.stringify(record)}\n`));
  } catch {
    // a lock without a record is judged by its intent, else by staleness
  }
}

/**
 * Remove the locks in `dir` whose holder is gone as far as this host can tell (the process its record
 * names, or, with no record, the taker that made it), with their records and intents, then the intents
 * of gone takers whose lock is not there. A lock nobody takes again (a batch run's) would otherwise stay
 * for ever. Best effort: what the disk does not let it read or remove is left for the next sweep. Every
 * command that writes .gen/ runs it on .gen/locks (openStore).
 */
export function sweepDeadLocks(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return; // no locks yet, or unreadable: nothing to do now
  }
  for (const name of names) {
    if (!name.endsWith('.lock')) continue;
    const lockDir = join(dir, name);
    try {
      const gone = takeOverIfOwnerGone(lockDir) ?? takeOverIfTakerGone(lockDir);
      // its record too, unless a new holder's has replaced it meanwhile
      if (gone !== undefined && recordedInode(lockDir) === gone.ino) fs.unlinkSync(ownerFile(lockDir));
    } catch {
      // the disk failed: left for the next sweep, or a taker
    }
  }
  sweepDeadIntents(dir);
}

/** When the holder recorded for `lockDir` is certainly gone, remove the lock and return that holder. */
function takeOverIfOwnerGone(lockDir: string): OwnerRecord | undefined {
  let owner: OwnerRecord;
  let ino: number;
  try {
    owner = readLockRecord(ownerFile(lockDir)) as unknown as OwnerRecord;
    ino = fs.lstatSync(lockDir).ino;
    if (ino !== owner.ino || !ownerGone(owner)) return undefined;
  } catch {
    return undefined; // no record (an older genjob, or a holder that died before writing it): see the intents
  }
  removeLock(lockDir);
  return owner;
}

/**
 * A lock with no record for its directory, whose takers' intents are all of processes of this host that
 * are gone, one of them made before the lock directory was born: that taker made the lock and died before
 * recording itself. Remove the lock (the intents go once it is taken again, or by the sweep); return the
 * taker. Anything else (a live taker, one on another host, no intent: an older genjob) is left to
 * staleness.
 */
function takeOverIfTakerGone(lockDir: string): OwnerRecord | undefined {
  let lock: { ino: number; birthtimeMs: number };
  let takers: Intent[];
  try {
    lock = fs.lstatSync(lockDir);
    if (recordedInode(lockDir) === lock.ino) return undefined; // its holder recorded itself: not gone
    takers = intentsOf(lockDir);
  } catch {
    return undefined; // gone meanwhile, or unreadable: staleness decides
  }
  // a birth time of 0 is a filesystem that does not keep one: nothing tells which taker made the lock
  // Stryker disable next-line ConditionalExpression,EqualityOperator: every filesystem the tests run on keeps a birth time
  if (lock.birthtimeMs <= 0 || !takers.every((t) => ownerGone(t.taker))) return undefined;
  const maker = takers.find((t) => t.mtimeMs <= lock.birthtimeMs);
  if (maker === undefined) return undefined;
  removeLock(lockDir); // the gone takers' intents go once the lock is taken (dropGoneTakers)
  return { ...maker.taker, ino: lock.ino };
}

// Stryker disable BlockStatement: an empty catch returns undefined all the same
/** The inode the owner record of `lockDir` names; undefined when there is no readable record. */
function recordedInode(lockDir: string): number | undefined {
  try {
    return (readLockRecord(ownerFile(lockDir)) as unknown as OwnerRecord).ino;
  } catch {
    return undefined;
  }
}
// Stryker restore BlockStatement

/** Remove the lock directory `lockDir`, whose holder is gone (another taker may have removed it first). */
function removeLock(lockDir: string): void {
  // move it aside first so two takers cannot remove each other's fresh lock
  const aside = join(lockDir, '..', `.taken-${process.pid}-${Date.now()}`);
  if (!renameIfThere(lockDir, aside)) return; // another taker removed it: try to take it
  // its record is left: it names the directory set aside, and the next holder replaces it
  // Stryker disable next-line BooleanLiteral: the directory set aside is there, so force changes nothing
  fs.rmSync(aside, { recursive: true, force: true });
}

// Stryker disable all: a rename within one directory fails but for ENOENT only on a disk error, which
// test/e2e/io-faults injects (unit tests cannot, as root)
/** Rename `from` to `to`; false when `from` is not there. */
function renameIfThere(from: string, to: string): boolean {
  try {
    fs.renameSync(from, to);
    return true;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false;
    throw err;
  }
}
// Stryker restore all
