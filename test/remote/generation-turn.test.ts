// Whose turn to generate an entry: a live holder of the entry lock is waited for (up to the
// request's deadline), a dead holder's lock is taken over at once, and an outbox record still
// standing under the lock is refused as in doubt, saying whether its serve died and how to consent.
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { refuseInDoubt, takeTurn } from '../../src/remote/generation-turn.js';
import { ResultCache } from '../../src/remote/result-cache.js';

let tmp: string;
let cache: ResultCache;
const NAME = `${'a'.repeat(64)}.0123456789abcdef`;
beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'gj-turn-'));
  cache = new ResultCache(join(tmp, 'cache'));
  await cache.init();
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

/** A pid that certainly no longer runs: a child that has exited and been reaped. */
function deadPid(): number {
  const pid = spawnSync('true').pid;
  if (pid === undefined) throw new Error('could not spawn true');
  return pid;
}

describe('takeTurn', () => {
  it('waits while a live serve holds the entry lock and takes it once released', async () => {
    const held = await cache.tryLock(NAME);
    expect(held).toBeDefined();
    expect(await cache.tryLock(NAME)).toBeUndefined();
    let released = false;
    setTimeout(() => {
      released = true;
      void held!();
    }, 600);
    // a deadline far above the holder's 600 ms: a loaded machine only makes the wait longer
    const release = await takeTurn(cache, NAME, Date.now() + 600_000);
    expect(released).toBe(true);
    await release();
  });

  it('gives up at the deadline with EGJ_GENERATION_RUNNING, naming the running serve', async () => {
    const held = await cache.tryLock(NAME);
    await cache.markStarted(NAME);
    // the holder never lets go: returning at all is giving up at the deadline
    const err = await takeTurn(cache, NAME, Date.now() + 500).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EGJ_GENERATION_RUNNING' });
    expect((err as Error).message).toContain(`serve pid ${process.pid}`);
    await held!();
  });

  it('takes over at once a lock whose recorded holder died (not after its 20 s staleness)', async () => {
    const lockDir = join(cache.dir, 'locks', `${NAME}.lock`);
    mkdirSync(lockDir);
    // touched an hour ahead: it never goes stale while this test runs, so only the owner-gone path can take it
    const future = new Date(Date.now() + 3_600_000);
    utimesSync(lockDir, future, future);
    const owner = { host: hostname(), pid: deadPid(), start: 1, ino: lstatSync(lockDir).ino };
    writeFileSync(`${lockDir}.owner`, JSON.stringify(owner));
    // a deadline only as a guard: without the takeover this ends EGJ_GENERATION_RUNNING
    const release = await takeTurn(cache, NAME, Date.now() + 120_000);
    await release();
  });
});

describe('refuseInDoubt', () => {
  it('passes when no generation is recorded as started', async () => {
    await expect(refuseInDoubt(cache, NAME, false)).resolves.toBeUndefined();
  });

  it('lets a generation whose serve died be generated again (abandoned), saying so on stderr', async () => {
    const record = { host: hostname(), pid: deadPid(), start: 1, started_at: '2025-01-01T00:00:00.000Z' };
    writeFileSync(join(cache.dir, 'started', `${NAME}.json`), JSON.stringify(record));
    const said: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((c: string | Uint8Array) => {
      said.push(String(c));
      return true;
    });
    try {
      await expect(refuseInDoubt(cache, NAME, false)).resolves.toBeUndefined();
    } finally {
      spy.mockRestore();
    }
    expect(said.join('')).toContain(`by serve pid ${record.pid}, which has since died, was abandoned`);
  });

  it('refuses a record it cannot tell about (another host, an unreadable record), naming the consent; consent lets it run', async () => {
    const record = { host: 'another-host', pid: 4242, start: 1, started_at: '2025-01-01T00:00:00.000Z' };
    writeFileSync(join(cache.dir, 'started', `${NAME}.json`), JSON.stringify(record));
    const err = await refuseInDoubt(cache, NAME, false).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EGJ_GENERATION_IN_DOUBT' });
    expect((err as Error).message).toContain('genjob retry KEY, or genjob work --retry-aborted');
    await expect(refuseInDoubt(cache, NAME, true)).resolves.toBeUndefined();
    writeFileSync(join(cache.dir, 'started', `${NAME}.json`), '{not json');
    expect(await refuseInDoubt(cache, NAME, false).catch((e: unknown) => e)).toMatchObject({
      code: 'EGJ_GENERATION_IN_DOUBT',
    });
  });

  it('refuses a record whose serve lives on (its result could not be stored) without calling it dead', async () => {
    await cache.markStarted(NAME);
    const err = await refuseInDoubt(cache, NAME, false).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EGJ_GENERATION_IN_DOUBT' });
    expect((err as Error).message).toContain(`serve pid ${process.pid} and never`);
  });
});
