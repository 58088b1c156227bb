// A lock whose maker died after making the lock directory but before recording itself (the window the
// owner record cannot cover) is taken over at once by the maker's intent, `<lock>.taking-<pid>-<start>`:
// only when every intent there is of a process of this host that is gone and one was made before the lock
// was born. A live taker, another host's taker, a taker that came after the lock, or no intent at all
// leave the lock to staleness. Real processes give the pids (a child that ran and exited, one that runs).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropIntent,
  intentFile,
  intentsOf,
  sweepDeadIntents,
  tryWriteIntent,
  writeIntent,
} from '../../src/store/lock-intents.js';
import { sweepDeadLocks, takeOwnedLock } from '../../src/store/lock-owner.js';
import { type ProcessId, processStart, thisProcess } from '../../src/store/process-identity.js';
import { tempDir } from '../helpers/temp-store.js';

const LONG = { waitMs: 0, staleMs: 60_000 };

/** A process that ran on this host and is gone now. */
function deadProcess(): ProcessId {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return { host: hostname(), pid: Number(child.stdout.toString()), start: 12345 };
}

let live: ChildProcess;
let liveId: ProcessId;
beforeAll(async () => {
  live = spawn('sleep', ['600'], { stdio: 'ignore' });
  await sleep(50);
  liveId = { host: hostname(), pid: live.pid!, start: processStart(live.pid!)! };
});
afterAll(() => {
  live.kill('SIGKILL');
});

const intent = (lockDir: string, who: ProcessId) =>
  writeFileSync(`${lockDir}.taking-${who.pid}-${who.start}`, `${JSON.stringify(who)}\n`);
const intents = (lockDir: string) => readdirSync(dirname(lockDir)).filter((n) => n.includes('.taking-'));

/** A lock left as a taker killed between making it and recording itself leaves it: intent, then mkdir. */
function lockLeftBy(who: readonly ProcessId[]): string {
  const lockDir = join(tempDir('genjob-intent-'), 'apply.lock');
  for (const w of who) intent(lockDir, w);
  mkdirSync(lockDir);
  return lockDir;
}

describe('a lock whose maker died before recording itself', () => {
  it('is taken over at once, and the dead taker intents are removed', async () => {
    const dead = deadProcess();
    const lockDir = lockLeftBy([dead]);
    const lock = await takeOwnedLock(lockDir, LONG);
    expect(lock?.tookOverFrom).toEqual({ host: dead.host, pid: dead.pid, start: dead.start });
    expect(intents(lockDir)).toEqual([]); // its own intent is dropped once its record is written
    await lock!.release();
    expect(existsSync(lockDir)).toBe(false);
  });

  it('is left to staleness while a taker there is alive (it may be the maker, about to record itself)', async () => {
    const lockDir = lockLeftBy([deadProcess(), liveId]);
    expect(await takeOwnedLock(lockDir, LONG)).toBeUndefined();
    expect(existsSync(lockDir)).toBe(true);
    expect(intents(lockDir)).toHaveLength(2);
  });

  it('is left to staleness when a taker is of another host, or there is no intent (an older genjob)', async () => {
    const elsewhere = { ...deadProcess(), host: `not-${hostname()}` };
    expect(await takeOwnedLock(lockLeftBy([elsewhere]), LONG)).toBeUndefined();
    expect(await takeOwnedLock(lockLeftBy([]), LONG)).toBeUndefined();
  });

  it('is left to staleness when the only dead intent came after the lock was born (a contender, not its maker)', async () => {
    const lockDir = lockLeftBy([]);
    await sleep(30); // past the filesystem clock's tick
    intent(lockDir, deadProcess());
    expect(await takeOwnedLock(lockDir, LONG)).toBeUndefined();
  });

  it('is judged by its record once there is one, whatever intents lie beside it', async () => {
    const lockDir = join(tempDir('genjob-intent-'), 'apply.lock');
    intent(lockDir, deadProcess()); // left by a taker killed in an earlier attempt, before this lock was born
    const held = await takeOwnedLock(lockDir, LONG);
    // (taking it dropped that intent: put one back, made before the lock was born, as a maker's would be)
    intent(lockDir, deadProcess());
    const before = new Date(statSync(lockDir).birthtimeMs - 60_000);
    for (const name of intents(lockDir)) utimesSync(join(dirname(lockDir), name), before, before);
    expect(await takeOwnedLock(lockDir, LONG)).toBeUndefined();
    await held!.release();
  });
});

describe('a lock taken by staleness', () => {
  it('drops the intents of gone takers beside it (nothing else would while it is there), and keeps a live one', async () => {
    const lockDir = lockLeftBy([]);
    await sleep(30); // a contender's intent, after the lock was born: not a taker-gone takeover
    const dead = deadProcess();
    intent(lockDir, dead);
    intent(lockDir, liveId);
    writeFileSync(`${lockDir}x.taking-${dead.pid}-${dead.start}`, JSON.stringify(dead)); // another lock's
    const past = new Date(Date.now() - 60_000);
    utimesSync(lockDir, past, past);
    const lock = await takeOwnedLock(lockDir, { waitMs: 0, staleMs: 5_000 });
    expect(lock?.tookOverFrom).toBeUndefined();
    expect(intents(lockDir).sort()).toEqual([
      `apply.lock.taking-${liveId.pid}-${liveId.start}`,
      `apply.lockx.taking-${dead.pid}-${dead.start}`,
    ]);
    await lock!.release();
  });
});

describe('sweepDeadLocks', () => {
  it("removes the locks whose holder is gone (by its record, or its maker's intent) with what lies beside them, and keeps the others", async () => {
    const dir = tempDir('genjob-intent-');
    const dead = deadProcess();
    // a batch run's lock whose maker died before recording itself: nobody takes that lock again
    intent(join(dir, 'batch-r1.lock'), dead);
    mkdirSync(join(dir, 'batch-r1.lock'));
    // a lock whose recorded holder is gone
    mkdirSync(join(dir, 'key-a.lock'));
    const ino = statSync(join(dir, 'key-a.lock')).ino;
    writeFileSync(join(dir, 'key-a.lock.owner'), JSON.stringify({ ...deadProcess(), ino }));
    // kept: a lock this process holds, one with a live taker's intent, one recorded by another host
    const held = await takeOwnedLock(join(dir, 'key-b.lock'), LONG);
    intent(join(dir, 'key-c.lock'), liveId);
    mkdirSync(join(dir, 'key-c.lock'));
    mkdirSync(join(dir, 'key-d.lock'));
    const inoD = statSync(join(dir, 'key-d.lock')).ino;
    const elsewhere = { ...deadProcess(), host: `not-${hostname()}`, ino: inoD };
    writeFileSync(join(dir, 'key-d.lock.owner'), JSON.stringify(elsewhere));
    // an intent of a gone taker whose lock is not there
    intent(join(dir, 'key-e.lock'), deadProcess());
    // a lock whose maker is gone, beside a record that names another directory (a new holder's): the record stays
    intent(join(dir, 'key-f.lock'), deadProcess());
    mkdirSync(join(dir, 'key-f.lock'));
    writeFileSync(join(dir, 'key-f.lock.owner'), JSON.stringify({ ...liveId, ino: 1 }));
    // not a lock (no .lock): left alone, whatever its record says
    mkdirSync(join(dir, 'aside'));
    const inoAside = statSync(join(dir, 'aside')).ino;
    writeFileSync(join(dir, 'aside.owner'), JSON.stringify({ ...deadProcess(), ino: inoAside }));
    sweepDeadLocks(dir);
    expect(readdirSync(dir).sort()).toEqual([
      'aside',
      'aside.owner',
      'key-b.lock',
      'key-b.lock.owner',
      'key-c.lock',
      `key-c.lock.taking-${liveId.pid}-${liveId.start}`,
      'key-d.lock',
      'key-d.lock.owner',
      'key-f.lock.owner',
    ]);
    expect(held!.lost()).toBeUndefined();
    await held!.release();
  });

  it('does nothing where there is no lock directory yet', () => {
    expect(() => sweepDeadLocks(join(tempDir('genjob-intent-'), 'locks'))).not.toThrow();
  });
});

describe('sweepDeadIntents', () => {
  it('removes the intents of gone takers whose lock is not there, and keeps the others', () => {
    const dir = tempDir('genjob-intent-');
    const gone = join(dir, 'a.lock');
    intent(gone, deadProcess());
    const liveOne = join(dir, 'b.lock');
    intent(liveOne, liveId);
    const locked = lockLeftBy([deadProcess()]); // another dir: its lock is there
    writeFileSync(join(dir, 'c.lock.taking-999999999-12345'), '{"torn'); // torn: judged by its name
    mkdirSync(join(dir, 'e.lock.taking-999999999-12345')); // cannot be removed as a file: stays, not counted
    // an owner record of a gone holder is not an intent: the sweep leaves it alone
    writeFileSync(join(dir, 'd.lock.owner'), JSON.stringify({ ...deadProcess(), ino: 1 }));
    expect(sweepDeadIntents(dir)).toBe(2);
    expect(readdirSync(dir).sort()).toEqual([
      `b.lock.taking-${liveId.pid}-${liveId.start}`,
      'd.lock.owner',
      'e.lock.taking-999999999-12345',
    ]);
    expect(sweepDeadIntents(dirname(locked))).toBe(0);
    expect(intents(locked)).toHaveLength(1);
  });
});

describe('writeIntent', () => {
  it('writes this process (host, pid, start) beside the lock, as intentsOf reads it back', () => {
    const lockDir = join(tempDir('genjob-intent-'), 'apply.lock');
    const file = intentFile(lockDir);
    expect(file).toBe(`${lockDir}.taking-${process.pid}-${thisProcess().start}`);
    writeIntent(file);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(thisProcess());
    expect(intentsOf(lockDir)).toEqual([{ file, taker: thisProcess(), mtimeMs: statSync(file).mtimeMs }]);
    dropIntent(file);
    expect(intentsOf(lockDir)).toEqual([]);
  });

  it('closes the file it opens', () => {
    const fds = () => readdirSync('/proc/self/fd').length;
    const lockDir = join(tempDir('genjob-intent-'), 'apply.lock');
    const before = fds();
    for (let i = 0; i < 20; i++) writeIntent(intentFile(lockDir));
    expect(fds()).toBe(before);
  });

  it('is written by tryWriteIntent, which leaves nothing at its name when it cannot write it', () => {
    const lockDir = join(tempDir('genjob-intent-'), 'apply.lock');
    const file = intentFile(lockDir);
    tryWriteIntent(file);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(thisProcess());
    dropIntent(file);
    symlinkSync('/dev/full', file); // O_NOFOLLOW: the open fails (ELOOP), and no throw reaches the taker
    expect(() => tryWriteIntent(file)).not.toThrow();
    expect(readdirSync(dirname(lockDir))).toEqual([]);
  });

  it('is EGJ_IO naming the intent when it cannot be written', () => {
    const file = intentFile(join(tempDir('genjob-intent-'), 'no-such-dir', 'apply.lock'));
    expect(() => writeIntent(file)).toThrow(
      expect.objectContaining({
        code: 'EGJ_IO',
        message: expect.stringContaining(`${file}: open failed`),
      }),
    );
  });
});
