// The host's cache prune: entries older than the window go, whole; an entry whose lock is held is
// never touched; scratch leftovers go only while no lock is held and only past an hour.
import { mkdirSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pruneCache } from '../../src/remote/cache-prune.js';
import { ResultCache } from '../../src/remote/result-cache.js';
import { tempDir } from '../helpers/temp-store.js';

const HOUR = 3_600_000;

async function cacheWith(names: string[], ageMs: number): Promise<ResultCache> {
  const cache = new ResultCache(join(tempDir('genjob-prune-'), 'genjob'));
  await cache.init();
  const then = new Date(Date.now() - ageMs);
  for (const n of names) {
    mkdirSync(join(cache.entryDir(n), 'files'), { recursive: true });
    writeFileSync(join(cache.entryDir(n), 'result.json'), '{}\n');
    utimesSync(join(cache.entryDir(n), 'result.json'), then, then);
    utimesSync(cache.entryDir(n), then, then);
  }
  return cache;
}

describe('pruneCache', () => {
  it('removes entries older than the window and keeps younger ones', async () => {
    const cache = await cacheWith(['old.1'], 3 * HOUR);
    mkdirSync(join(cache.entryDir('new.1')), { recursive: true });
    writeFileSync(join(cache.entryDir('new.1'), 'result.json'), '{}\n');
    const r = await pruneCache(cache, 2 * HOUR);
    expect(r.entries).toEqual(['old.1']);
    expect(readdirSync(join(cache.dir, 'results'))).toEqual(['new.1']);
  });

  it('never removes an entry whose lock is held, nor scratch dirs while any lock is held', async () => {
    const cache = await cacheWith(['busy.1', 'idle.1'], 3 * HOUR);
    mkdirSync(join(cache.dir, 'locks', 'busy.1.lock'));
    const then = new Date(Date.now() - 3 * HOUR);
    mkdirSync(join(cache.workDir, 'a-x'));
    utimesSync(join(cache.workDir, 'a-x'), then, then);
    const r = await pruneCache(cache, 0);
    expect(r.skipped_locked).toEqual(['busy.1']);
    expect(readdirSync(join(cache.dir, 'results'))).toEqual(['busy.1']);
    expect(readdirSync(cache.workDir)).toEqual(['a-x']);
  });

  it('sweeps scratch leftovers older than an hour when no lock is held; --dry-run removes nothing', async () => {
    const cache = await cacheWith([], 0);
    const then = new Date(Date.now() - 2 * HOUR);
    mkdirSync(join(cache.workDir, 'a-old'));
    utimesSync(join(cache.workDir, 'a-old'), then, then);
    mkdirSync(join(cache.workDir, 'a-new'));
    expect((await pruneCache(cache, 0, { dryRun: true })).leftovers).toEqual(['work/a-old']);
    expect(readdirSync(cache.workDir).sort()).toEqual(['a-new', 'a-old']);
    await pruneCache(cache, 0);
    expect(readdirSync(cache.workDir)).toEqual(['a-new']);
  });

  it('sizes a leftover without following its links, and removes the link, not what it points to', async () => {
    const cache = await cacheWith([], 0);
    const outside = join(cache.dir, '..', 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'big.bin'), Buffer.alloc(1 << 20));
    // a crashed request's workspace, where the generator left a link out and a link to itself
    const ws = join(cache.workDir, 'a-old');
    mkdirSync(ws);
    symlinkSync(outside, join(ws, 'out'));
    symlinkSync('.', join(ws, 'self'));
    const then = new Date(Date.now() - 2 * HOUR);
    utimesSync(ws, then, then);
    const r = await pruneCache(cache, 0);
    expect(r.leftovers).toEqual(['work/a-old']);
    expect(r.bytes).toBeLessThan(4096);
    expect(readdirSync(cache.workDir)).toEqual([]);
    expect(readdirSync(outside)).toEqual(['big.bin']);
  });
});
