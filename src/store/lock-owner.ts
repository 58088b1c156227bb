// Who holds a proper-lockfile lock: `<lock>.owner` beside the lock directory records the holder's host,
// pid and start time and the lock directory's inode. A lock whose recorded owner is certainly gone (this
// host, pid dead or reused) is taken over at once instead of after the ~10 s staleness. The inode ties
// the record to one lock directory, so a record left by an earlier holder never condemns a newer lock.
// Like the lock directory itself (made by proper-lockfile), the record goes through node:fs, not store.fs.
import { join } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { replaceFile } from './durable.js';
import { nodeFs as fs } from './fs-port.js';
import { ownerGone, type ProcessId, thisProcess } from './process-identity.js';

interface OwnerRecord extends ProcessId {
  ino: number;
}

const ownerFile = (lockDir: string) => `${lockDir}.owner`;

/** Record this process as the holder of the lock directory `lockDir` (EGJ_IO when it cannot be written). */
export function recordOwner(lockDir: string): void {
  const record: OwnerRecord = { ...thisProcess(), ino: fs.lstatSync(lockDir).ino };
  replaceFile({ fs }, ownerFile(lockDir), Buffer.from(`${JSON.stringify(record)}\n`));
}

/** Remove our record before releasing the lock (EGJ_IO when it cannot be removed). */
export function dropOwner(lockDir: string): void {
  fs.rmSync(ownerFile(lockDir), { force: true });
}

/** When the holder recorded for `lockDir` is certainly gone, remove the lock and return true (take it again). */
export function takeOverIfOwnerGone(lockDir: string): boolean {
  let owner: OwnerRecord;
  try {
    owner = JSON.parse(fs.readFileSync(ownerFile(lockDir), 'utf8')) as OwnerRecord;
    if (fs.lstatSync(lockDir).ino !== owner.ino || !ownerGone(owner)) return false;
  } catch {
    return false; // no record (an older genjob, or a holder that died before writing it): staleness decides
  }
  // move it aside first so two takers cannot remove each other's fresh lock
  const aside = join(lockDir, '..', `.taken-${process.pid}-${Date.now()}`);
  try {
    fs.renameSync(lockDir, aside);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return true; // someone else removed it: try to take it
    throw err;
  }
  fs.rmSync(aside, { recursive: true, force: true });
  fs.rmSync(ownerFile(lockDir), { force: true });
  return true;
}
