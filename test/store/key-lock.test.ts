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

// The child takes the per-key lock, says so, holds it until the file argv[4] exists, releases it and says
// so (a release the test decides, not a time: a loaded machine must not let it go early).
const CHILD = `
import { existsSync } from 'node:fs';
import { withKeyLock } from '../../src/store/key-lock.js';
import { Store } from '../../src/store/store.js';
async function main() {
  const [root, key, release] = process.argv.slice(2);
  await withKeyLock(new Store(root), key, async () => {
    process.stdout.write('held\\n');
    while (!existsSync(release)) await new Promise((r) => setTimeout(r, 10));
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

/** A child process holding the key's lock until `release` exists, resolved once it holds it. */
async function holder(store: Store, release = join(store.root, 'never')): Promise<ChildProcess> {
  const child = spawn(process.execPath, [childJs, store.root, KEY, release], {
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
    const child = await holder(store);
    const pid = child.pid;
    await kill9(child);
    const from = await withKeyLock(store, KEY, (lock) => lock.tookOverFrom);
    expect(from).toMatchObject({ pid }); // the owner-gone path, not proper-lockfile's staleness
    // and released cleanly: the next taker finds it free
    expect(await withKeyLock(store, KEY, (lock) => lock.tookOverFrom)).toBeUndefined();
  });

  it('never takes over by pid a lock whose record names another host; only staleness frees it', async () => {
    const store = tempStore('genjob-keylock-');
    await kill9(await holder(store));
    const owner = `${lockDir(store)}.owner`;
    writeFileSync(owner, JSON.stringify({ ...JSON.parse(readFileSync(owner, 'utf8')), host: 'another-box' }));
    await expect(lockNamed(store, `key-${KEY}`, { waitMs: 1_000, staleMs: 60_000 })).rejects.toMatchObject({
      code: 'EGJ_LOCKED',
    });
    // a wait far above the 2 s staleness: a loaded machine only makes it longer
    const stale = await lockNamed(store, `key-${KEY}`, { waitMs: 120_000, staleMs: 2_000 });
    expect(stale.tookOverFrom).toBeUndefined();
    await stale.release();
  });

  it('waits for a live holder and takes the lock once it is released', async () => {
    const store = tempStore('genjob-keylock-');
    const release = join(store.root, 'release');
    const child = await holder(store, release);
    await expect(lockNamed(store, `key-${KEY}`, { waitMs: 0 })).rejects.toMatchObject({ code: 'EGJ_LOCKED' });
    const exited = once(child, 'exit');
    // asked while it is held (a wait far above anything a loaded machine needs); released after the ask
    const taken = lockNamed(store, `key-${KEY}`, { waitMs: 600_000 });
    writeFileSync(release, '');
    const lock = await taken;
    expect(lock.tookOverFrom).toBeUndefined(); // the holder released it; nothing was taken over
    await lock.release();
    expect(await exited).toEqual([0, null]);
  });
});
