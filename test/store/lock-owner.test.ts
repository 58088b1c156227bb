// The owned lock's own failures and bookkeeping, on a real filesystem: each failure is EGJ_IO naming the
// call and the file, and leaves no lock, record or intent of ours behind; release removes our record and
// never another holder's directory; a take-over leaves nothing set aside.
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { nodeFs } from '../../src/store/fs-port.js';
import { intentFile } from '../../src/store/lock-intents.js';
import { sparingTheirs, takeOwnedLock } from '../../src/store/lock-owner.js';
import { tempDir } from '../helpers/temp-store.js';

const LONG = { waitMs: 0, staleMs: 60_000 };
const lockIn = (dir = tempDir('genjob-lock-')) => join(dir, 'apply.lock');
const ioError = (message: RegExp) =>
  expect.objectContaining({ code: 'EGJ_IO', message: expect.stringMatching(message) });

describe('takeOwnedLock failures', () => {
  it('is EGJ_IO naming the mkdir when the lock cannot be made', async () => {
    const lockDir = join(tempDir('genjob-lock-'), 'gone', 'apply.lock');
    await expect(takeOwnedLock(lockDir, LONG)).rejects.toEqual(
      ioError(new RegExp(`^${lockDir}: lock \\(mkdir\\) failed: .*\\(ENOENT\\)$`)),
    );
  });

  it('takes the lock all the same when its intent cannot be written (as on a full disk)', async () => {
    const lockDir = lockIn();
    mkdirSync(intentFile(lockDir)); // open(O_WRONLY) of a directory fails: EISDIR
    const lock = await takeOwnedLock(lockDir, LONG);
    expect(lock?.lost()).toBeUndefined();
    await lock!.release();
  });

  it("names proper-lockfile's call when taking a stale lock fails (a file where the lock directory goes)", async () => {
    const lockDir = lockIn();
    writeFileSync(lockDir, '');
    utimesSync(lockDir, new Date(0), new Date(0)); // stale: proper-lockfile removes it with rmdir
    await expect(takeOwnedLock(lockDir, LONG)).rejects.toEqual(
      ioError(new RegExp(`^${lockDir}: lock \\(rmdir\\) failed: .*\\(ENOTDIR\\)$`)),
    );
    expect(readdirSync(dirname(lockDir))).toEqual(['apply.lock']); // no intent left
  });

  it('takes the lock without a record when the record cannot be written (as on a full disk), and no intent stays', async () => {
    const lockDir = lockIn();
    mkdirSync(`${lockDir}.owner`); // the record's rename into place fails
    const lock = await takeOwnedLock(lockDir, LONG);
    expect(lock?.lost()).toBeUndefined();
    expect(readdirSync(dirname(lockDir)).sort()).toEqual(['apply.lock', 'apply.lock.owner']);
    await lock!.release();
    expect(readdirSync(dirname(lockDir))).toEqual(['apply.lock.owner']);
  });
});

describe('an owned lock', () => {
  it('removes its record and its directory when released', async () => {
    const lockDir = lockIn();
    const lock = await takeOwnedLock(lockDir, LONG);
    expect(readdirSync(dirname(lockDir)).sort()).toEqual(['apply.lock', 'apply.lock.owner']);
    expect(lock!.lost()).toBeUndefined();
    await lock!.release();
    expect(readdirSync(dirname(lockDir))).toEqual([]);
  });

  it('records its holder without an fsync: the record is advisory, and every job takes two locks', async () => {
    const lockDir = lockIn();
    const fsync = vi.spyOn(nodeFs, 'fsyncSync');
    try {
      const lock = await takeOwnedLock(lockDir, LONG);
      expect(JSON.parse(readFileSync(`${lockDir}.owner`, 'utf8'))).toMatchObject({
        pid: process.pid,
        ino: statSync(lockDir).ino,
      });
      expect(fsync).not.toHaveBeenCalled();
      await lock!.release();
    } finally {
      fsync.mockRestore();
    }
  });

  it('says it is lost when its directory is gone, and EGJ_IO when it cannot look', async () => {
    const dir = tempDir('genjob-lock-');
    const lockDir = lockIn(join(dir, 'locks'));
    mkdirSync(dirname(lockDir));
    const lock = await takeOwnedLock(lockDir, LONG);
    rmSync(lockDir, { recursive: true });
    expect(lock!.lost()?.message).toBe('the lock directory was removed by another process');
    renameSync(join(dir, 'locks'), join(dir, 'elsewhere'));
    writeFileSync(join(dir, 'locks'), ''); // a file where the lock's directory was: lstat fails ENOTDIR
    expect(() => lock!.lost()).toThrow(ioError(new RegExp(`^${lockDir}: lstat failed: .*\\(ENOTDIR\\)$`)));
    await lock!.release().catch(() => {});
  });

  it('is taken over from a gone holder without leaving the directory set aside, even with files in it', async () => {
    const lockDir = lockIn();
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, 'in-the-way'), ''); // as an apply that could not remove its lock leaves it
    writeFileSync(
      `${lockDir}.owner`,
      JSON.stringify({
        host: (await import('node:os')).hostname(),
        pid: 999_999_999,
        start: 1,
        ino: statSync(lockDir).ino,
      }),
    );
    const lock = await takeOwnedLock(lockDir, LONG);
    expect(lock?.tookOverFrom).toEqual({ host: expect.any(String), pid: 999_999_999, start: 1 });
    expect(readdirSync(dirname(lockDir)).sort()).toEqual(['apply.lock', 'apply.lock.owner']);
    await lock!.release();
  });
});

describe('sparingTheirs', () => {
  it("removes the lock directory while it is ours (or before ours is known), never another holder's", () => {
    const lockDir = lockIn();
    mkdirSync(lockDir);
    const ours = statSync(lockDir).ino;
    sparingTheirs(() => ours + 1).rmdirSync(lockDir);
    expect(statSync(lockDir).ino).toBe(ours);
    sparingTheirs(() => ours).rmdirSync(lockDir);
    expect(() => statSync(lockDir)).toThrow(/ENOENT/);
    mkdirSync(lockDir);
    sparingTheirs(() => undefined).rmdirSync(lockDir);
    expect(() => statSync(lockDir)).toThrow(/ENOENT/);
  });

  it('does the same through the callback rmdir proper-lockfile uses', async () => {
    const lockDir = lockIn();
    mkdirSync(lockDir);
    const ours = statSync(lockDir).ino;
    const rmdir = (ino: number | undefined) =>
      new Promise<NodeJS.ErrnoException | null>((done) => sparingTheirs(() => ino).rmdir(lockDir, done));
    expect(await rmdir(ours + 1)).toBeNull();
    expect(statSync(lockDir).ino).toBe(ours);
    expect(await rmdir(ours)).toBeNull();
    expect(() => statSync(lockDir)).toThrow(/ENOENT/);
    expect((await rmdir(ours))?.code).toBe('ENOENT'); // gone: the removal says so
  });
});
