// Two OS processes apply the same key at the same moment: exactly one writes, the tree ends correct.
import { execFile } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import { makeFixture, readOrNull, removeTempDirs, tempDir } from './fixture.js';

afterEach(removeTempDirs);

const run = promisify(execFile);

// The child waits for a shared start instant, applies, and prints its outcome (or error code) as JSON.
const CHILD = `
import { readFileSync } from 'node:fs';
import { applyJob } from '../../src/apply/apply-job.js';
import { Store } from '../../src/store/store.js';
async function main() {
  const c = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  while (Date.now() < c.startAt) await new Promise((r) => setTimeout(r, 1));
  try {
    const out = await applyJob({ ...c.v, store: new Store(c.root) }, { lockTimeoutMs: c.lockTimeoutMs });
    console.log(JSON.stringify({ status: out.status }));
  } catch (err) {
    console.log(JSON.stringify({ status: err.code ?? String(err) }));
  }
}
main();
`;

describe('applyJob across processes', () => {
  it('lets exactly one of two racing processes apply; the other sees already-applied or EGJ_LOCKED', async () => {
    const work = tempDir('genjob-child-');
    const child = join(work, 'child.cjs');
    await build({
      stdin: { contents: CHILD, resolveDir: import.meta.dirname, loader: 'ts' },
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      outfile: child,
      logLevel: 'silent',
    });
    for (const lockTimeoutMs of [0, 10_000]) {
      const f = makeFixture({
        files: { 'a.txt': 'a\n', 'b/c.txt': 'c\n' },
        inputs: ['a.txt', 'b/c.txt', 'b/d.txt'],
        outputs: { 'a.txt': 'A\n', 'b/c.txt': 'C\n', 'b/d.txt': 'D\n' },
      });
      const config = join(work, `config-${lockTimeoutMs}.json`);
      const { store: _store, ...v } = f.v;
      writeFileSync(config, JSON.stringify({ root: f.root, v, lockTimeoutMs, startAt: Date.now() + 400 }));
      const results = await Promise.all([0, 1].map(() => run(process.execPath, [child, config])));
      const statuses = results.map((r) => JSON.parse(r.stdout).status as string).sort();
      expect(statuses.filter((s) => s === 'applied')).toHaveLength(1);
      expect(statuses.filter((s) => s !== 'applied')[0]).toMatch(
        lockTimeoutMs > 0 ? /^already-applied$/ : /^(already-applied|EGJ_LOCKED)$/,
      );
      for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
      expect(readdirSync(f.v.store.layout.dir('applied'))).toEqual([`${f.v.job.key}.json`]);
      expect(readdirSync(f.v.store.layout.dir('applying'))).toEqual([]);
    }
  });
});
