// A lock taker's intent, `<lock>.taking-<pid>-<start>` beside the lock directory, holding the taker's
// host, pid and start time: written before the lock's mkdir, dropped once the owner record is written
// (or the attempt failed). It is what tells, for a lock with no record, whether the process that made it
// is gone (lock-owner.ts). Intents go through node:fs, like the locks; a leftover one is harmless and
// swept by the next command that writes .gen/.
import { constants } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { IoError } from '../core/errors.js';
import { exists } from './durable.js';
import { nodeFs as fs } from './fs-port.js';
import { ownerGone, type ProcessId, thisProcess } from './process-identity.js';
import { readRecordFile } from './read-record.js';

/** An owner or intent record is a few dozen bytes: anything past this is not ours. */
const LOCK_RECORD_BYTES = 4096;

/**
 * A lock's owner or intent record, parsed. Read as hostile (a branch may commit `.gen/locks/`): a link
 * (to /dev/zero, say), a FIFO or a device is RecordUnreadableError, not followed or waited on; a
 * missing file throws EGJ_IO (ENOENT) and bad JSON a SyntaxError, as reading and parsing it plainly would.
 */
export function readLockRecord(file: string): Record<string, unknown> {
  const bytes = readRecordFile(fs, file, LOCK_RECORD_BYTES);
  if (bytes === undefined) throw IoError.gone('read', file);
  const v: unknown = JSON.parse(bytes.toString('utf8'));
  // null, a number, an array: unreadable as a torn record is (whose holder then goes unrecognised)
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SyntaxError(`${file}: not a record`);
  return v as Record<string, unknown>;
}

export interface Intent {
  file: string;
  taker: ProcessId;
  /** When it was written: a taker that wrote it before the lock directory was born may have made it. */
  mtimeMs: number;
}

/** The intents beside the lock directory `lockDir` (throws when they cannot be read). */
export function intentsOf(lockDir: string): Intent[] {
  const prefix = `${basename(lockDir)}.taking-`;
  return fs
    .readdirSync(dirname(lockDir))
    .filter((name) => name.startsWith(prefix))
    .map((name) => {
      const file = join(dirname(lockDir), name);
      const taker = readLockRecord(file) as unknown as ProcessId; // ownerGone checks each field it uses
      return { file, taker, mtimeMs: fs.statSync(file).mtimeMs };
    });
}

/** This process's intent for the lock directory `lockDir`. */
export const intentFile = (lockDir: string) => {
  const me = thisProcess();
  return `${lockDir}.taking-${me.pid}-${me.start}`;
};

/** Say that this process is about to take the lock (EGJ_IO naming the call when it cannot be written). */
export function writeIntent(file: string): void {
  // not fsynced: it speaks of a live process, and after a power loss every process is gone anyway
  const fd = fs.openSync(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
  );
  try {
    fs.writeSync(fd, Buffer.from(`${JSON.stringify(thisProcess())}\n`));
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * writeIntent, best effort (a full disk): the lock is taken all the same. An intent only lets a lock whose
 * maker died before recording itself be taken over before it is stale, and a lock that could not be taken
 * would leave a job that cannot be put back.
 */
export function tryWriteIntent(file: string): void {
  try {
    writeIntent(file);
  } catch {
    dropIntent(file); // a torn one, if any
  }
}

/** Best effort: an intent left behind names a process that is gone; the next sweep (or take-over) removes it. */
export function dropIntent(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    // see above
  }
}

/**
 * Remove the intents in `dir` left by takers of this host that are gone (killed between writing one and
 * dropping it, or whose unlink failed) for locks that are no longer there. Best effort: whatever cannot
 * be looked at or removed stays for the next sweep. sweepDeadLocks (lock-owner.ts) runs it after removing
 * the dead locks. Returns how many were removed.
 */
export function sweepDeadIntents(dir: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0; // no locks yet, or unreadable: nothing to do now
  }
  for (const name of names) {
    const at = name.indexOf('.taking-');
    // Stryker disable next-line EqualityOperator: a name that starts with `.taking-` names the directory itself as its lock, which is there
    if (at < 0) continue;
    try {
      // while its lock is there, the intent may be all that tells that the lock's maker is gone
      if (exists({ fs }, join(dir, name.slice(0, at)))) continue;
    } catch /* Stryker disable next-line BlockStatement: exists throws only for a disk error, which test/e2e/io-faults injects and unit tests cannot */ {
      continue; // the disk failed: left for the next sweep
    }
    if (removeIfTakerGone(join(dir, name), name)) removed += 1;
  }
  return removed;
}

/**
 * Remove the intents of gone takers beside `lockDir`, which this process has just taken: what they could
 * tell (whether the lock's maker died before recording itself) no longer matters. A lock taken from such a
 * taker by staleness would otherwise keep its intent until a sweep after the lock is gone.
 */
export function dropGoneTakers(lockDir: string): void {
  const prefix = `${basename(lockDir)}.taking-`;
  let names: string[];
  try {
    names = fs.readdirSync(dirname(lockDir));
  } catch {
    return; // best effort: the sweep gets them once the lock is gone
  }
  for (const name of names)
    if (name.startsWith(prefix)) removeIfTakerGone(join(dirname(lockDir), name), name);
}

/** Remove the intent `file` when its taker is gone; false when it stays (alive, or the disk failed). */
function removeIfTakerGone(file: string, name: string): boolean {
  try {
    if (!intentGone(file, name)) return false;
    fs.unlinkSync(file);
    return true;
  } catch {
    return false; // dropped meanwhile, or the disk failed: left for the next sweep
  }
}

function intentGone(file: string, name: string): boolean {
  try {
    return ownerGone(readLockRecord(file));
  } catch (err) {
    // Stryker disable next-line ConditionalExpression: as false, an intent that cannot be read is judged by its name, and its unlink fails as the read did
    if (!(err instanceof SyntaxError)) throw err;
    // torn (killed mid-write): judge it by the pid and start time in its name
    // Stryker disable next-line Regex: without the $ the greedy \d+ still takes the whole start time
    const m = /\.taking-(\d+)-(\d+)$/.exec(name);
    // Stryker disable next-line ConditionalExpression: as true, a name that does not match throws on m[1], which the sweep takes as "leave it"
    return m !== null && ownerGone({ host: hostname(), pid: Number(m[1]), start: Number(m[2]) });
  }
}
