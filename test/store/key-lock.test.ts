// The per-key lock across real processes: a holder killed with -9 is taken over at once (by its owner
// record, not by the 10 s staleness), a lock whose record names another host is left to staleness, and
// a live holder is waited for.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockNamed, withKeyLock } from '../../src/store/key-lock.js';
import type { Store } from '../../src/store/store.js';
import { bundleChild } from '../helpers/bundle-child.js';
import { afterTest, tempStore } from '../helpers/temp-store.js';

const KEY = 'k'.repeat(64);

// The child takes the per-key lock, says so, holds it for argv[4] ms, releases it and says so.
const CHILD = `
import { withKeyLock } from '../../src/store/key-lock.js';
import { Store } from '../../src/store/store.js';
async function main() {
  const [root, key, holdMs] = process.argv.slice(2);
  await withKeyLock(new Store(root), key, async () => {
    process.stdout.write('held\\n');
    await new Promise((r) => setTimeout(r, Number(holdMs)));
  });
  process.stdout.write('released\\n');
}
main();
`;

let childDir: string;
let childJs: string;
afterAll(() => rmSync(childDir, { recursive: true, force: true }));
beforeAll(async () => {
  childDir = mkdtempSync(join(tmpdir(), 'genjob-keylock-child-')); // kept for all tests: tempDir goes after each
  childJs = await bundleChild(CHILD, import.meta.dirname, childDir);
});

/** A child process holding the key's lock for `holdMs`, resolved once it holds it. */
async function holder(store: Store, holdMs: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [childJs, store.root, KEY, String(holdMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  afterTest(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (d: string) => {
    out += d;
  });
  while (!out.includes('held\n')) {
    if (child.exitCode !== null) throw new Error(`lock holder exited ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return child;
}

async function kill9(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

const lockDir = (store: Store) => join(store.layout.dir('locks'), `key-${KEY}.lock`);

describe('per-key lock', () => {
  it('takes over at once the lock of a holder killed with -9, by its owner record', async () => {
    const store = tempStore('genjob-keylock-');
    const child = await holder(store, 600_000);
    const pid = child.pid;
    await kill9(child);
    const asked = Date.now();
    const from = await withKeyLock(store, KEY, (lock) => lock.tookOverFrom);
    expect(from).toMatchObject({ pid }); // the owner-gone path, not proper-lockfile's staleness
    expect(Date.now() - asked).toBeLessThan(5_000);
    // and released cleanly: the next taker finds it free
    expect(await withKeyLock(store, KEY, (lock) => lock.tookOverFrom)).toBeUndefined();
  });

  it('never takes over by pid a lock whose record names another host; only staleness frees it', async () => {
    const store = tempStore('genjob-keylock-');
    await kill9(await holder(store, 600_000));
    const owner = `${lockDir(store)}.owner`;
    writeFileSync(owner, JSON.stringify({ ...JSON.parse(readFileSync(owner, 'utf8')), host: 'another-box' }));
    await expect(lockNamed(store, `key-${KEY}`, { waitMs: 1_000, staleMs: 60_000 })).rejects.toMatchObject({
      code: 'EGJ_LOCKED',
    });
    const stale = await lockNamed(store, `key-${KEY}`, { waitMs: 10_000, staleMs: 2_000 });
    expect(stale.tookOverFrom).toBeUndefined();
    await stale.release();
  });

  it('waits for a live holder and takes the lock once it is released', async () => {
    const store = tempStore('genjob-keylock-');
    const child = await holder(store, 800);
    await expect(lockNamed(store, `key-${KEY}`, { waitMs: 0 })).rejects.toMatchObject({ code: 'EGJ_LOCKED' });
    const exited = once(child, 'exit');
    const asked = Date.now();
    const from = await withKeyLock(store, KEY, (lock) => lock.tookOverFrom);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(500); // it waited out the holder's 800 ms
    expect(from).toBeUndefined(); // the holder released it; nothing was taken over
    expect(await exited).toEqual([0, null]);
  });
});
