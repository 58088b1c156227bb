// Storing a host cache entry: commit says whether the entry it sealed is the one in place, since serve
// answers a fresh result as it built it only then; an entry a racing delivery put there first stands.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ResultCache } from '../../src/remote/result-cache.js';
import { bundleChild } from '../helpers/bundle-child.js';
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

describe('ResultCache durability (strace)', () => {
  const CHILD = `
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ResultCache } from '../../src/remote/result-cache.js';
const NAME = '${NAME}';
(async () => {
  const cache = new ResultCache(process.argv[2]);
  await cache.init();
  await cache.markStarted(NAME);
  const dir = await cache.tmpDir();
  mkdirSync(join(dir, 'files', 'sub'), { recursive: true });
  writeFileSync(join(dir, 'files', 'sub', 'out.txt'), 'generated');
  writeFileSync(join(dir, 'result.json'), JSON.stringify({ job_digest: 'd', status: 'ok', reason: null,
    outputs: [], generator: { command: 'g', version: null },
    timings: { started_at: '', finished_at: '', generate_ms: 0 } }));
  process.stdout.write(dir);
  await cache.commit(NAME, dir);
})();
`;

  it('fsyncs the started record’s directory, every file and directory of an entry before its rename, and results/ after', async () => {
    const dir = tempDir('genjob-cache-sync-');
    const child = await bundleChild(CHILD, join(import.meta.dirname), dir);
    const cacheDir = join(dir, 'cache');
    const trace = join(dir, 'trace');
    const r = spawnSync(
      'strace',
      [
        '-f',
        '-y',
        '-e',
        'trace=fsync,rename,renameat,renameat2',
        '-o',
        trace,
        process.execPath,
        child,
        cacheDir,
      ],
      {
        encoding: 'utf8',
      },
    );
    expect(r.status).toBe(0);
    const built = r.stdout;
    const lines = readFileSync(trace, 'utf8').split('\n');
    const renamed = lines.findIndex(
      (l) => /rename/.test(l) && l.includes(built) && l.includes(`results/${NAME}`),
    );
    expect(renamed).toBeGreaterThan(-1);
    const synced = (path: string) =>
      lines.flatMap((l, i) =>
        new RegExp(`fsync\\(\\d+<${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}>\\)`).test(l) ? [i] : [],
      );
    expect(synced(join(cacheDir, 'started')).length).toBeGreaterThan(0);
    for (const p of ['result.json', 'mac', 'files/sub/out.txt', 'files/sub', 'files', ''])
      expect(
        synced(p === '' ? built : join(built, p)).some((i) => i < renamed),
        p || 'the entry',
      ).toBe(true);
    expect(synced(join(cacheDir, 'results')).some((i) => i > renamed)).toBe(true);
  });
});
