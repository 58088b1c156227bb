// Storing a host cache entry: commit says whether the entry it sealed is the one in place, since serve
// answers a fresh result as it built it only then; an entry a racing delivery put there first stands.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ResultCache } from '../../src/remote/result-cache.js';
import { tempDir } from '../helpers/temp-store.js';

const NAME = `${'b'.repeat(64)}.0123456789abcdef`;

async function built(cache: ResultCache, text: string): Promise<string> {
  const dir = await cache.tmpDir();
  mkdirSync(join(dir, 'files'));
  const result = {
    job_digest: 'd',
    status: 'aborted',
    reason: text,
    outputs: [],
    generator: { command: 'g', version: null },
    timings: { started_at: '', finished_at: '', generate_ms: 0 },
  };
  writeFileSync(join(dir, 'result.json'), JSON.stringify(result));
  return dir;
}

describe('ResultCache.commit', () => {
  it('is true when its entry is put in place, false when a racing one stood: theirs kept, ours removed', async () => {
    const cache = new ResultCache(join(tempDir('genjob-cache-'), 'cache'));
    await cache.init();
    const first = await built(cache, 'first');
    const second = await built(cache, 'second');
    expect(await cache.commit(NAME, first)).toBe(true);
    expect(await cache.commit(NAME, second)).toBe(false);
    expect(existsSync(second)).toBe(false);
    expect(JSON.parse(readFileSync(join(cache.entryDir(NAME), 'result.json'), 'utf8')).reason).toBe('first');
    expect((await cache.read(NAME))?.reason).toBe('first');
  });
});
