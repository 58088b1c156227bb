// Conflicts (exit 4): an input edited after mint makes apply refuse the stale job and keep the
// edit; a key that already names a different job (same work order, other digest) is never
// overwritten by a mint.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEMO_GENERATOR,
  genDir,
  makeSandbox,
  mintKey,
  readJson,
  snapshot,
  TIMEOUT_INSTRUCTION,
} from './helpers.js';

describe('an input edited after mint', () => {
  it('makes apply exit 4 with EGJ_STALE and keeps the edit intact', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py']);
    const file = join(sb.repo, 'src/user.py');
    expect((await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n# a human edit\n`);
    const before = snapshot(sb.repo);
    expect((await sb.genjob(['verify', key])).exitCode).toBe(0); // verify checks the receipt, not the tree
    const apply = await sb.genjob(['apply', key]);
    expect(apply.exitCode).toBe(4);
    expect(apply.stderr).toMatch(
      /^genjob: EGJ_STALE: src\/user\.py: the repository changed under the job \(expected sha256 [0-9a-f]{12}, found sha256 [0-9a-f]{12}\); rule 6: every input must still match the job; nothing was written\n$/,
    );
    expect(snapshot(sb.repo)).toEqual(before);
    expect(readFileSync(file, 'utf8')).toContain('# a human edit');
    expect(genDir(sb, 'applied')).toEqual([]);
    expect(genDir(sb, 'applying')).toEqual([]);
  });

  it('dead-letters the job at work time (EGJ_INPUT_CHANGED) when the edit came before it was shipped', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py']);
    const file = join(sb.repo, 'src/user.py');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n# a human edit\n`);
    const before = snapshot(sb.repo);
    const work = await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR]);
    expect(work.exitCode).toBe(0);
    expect(work.stderr).toContain(`${key.slice(0, 12)} dead-lettered: `);
    expect(genDir(sb, 'received')).toEqual([]);
    const why = genDir(sb, 'dead').filter((n) => n.endsWith('.why.json'));
    expect(why).toHaveLength(1);
    expect(readJson(join(sb.repo, '.gen/dead', why[0]!))).toMatchObject({ key, code: 'EGJ_INPUT_CHANGED' });
    expect(snapshot(sb.repo)).toEqual(before);
  });

  it('makes apply exit 4 when a file the job was to create appeared meanwhile', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Start a changelog', [], ['--create', 'CHANGELOG.md']);
    expect((await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
    writeFileSync(join(sb.repo, 'CHANGELOG.md'), 'mine\n');
    const apply = await sb.genjob(['apply', key]);
    expect(apply.exitCode).toBe(4);
    expect(apply.stderr).toMatch(
      /^genjob: EGJ_STALE: CHANGELOG\.md: the repository changed under the job \(expected absent, found sha256 [0-9a-f]{12}\)/,
    );
    expect(readFileSync(join(sb.repo, 'CHANGELOG.md'), 'utf8')).toBe('mine\n');
  });
});

describe('a key reused with a different job', () => {
  const states = ['queue', 'received'] as const;
  for (const state of states) {
    it(`makes mint exit 4 with EGJ_KEY_CONFLICT and leaves the ${state}/ file untouched`, async () => {
      const sb = await makeSandbox();
      const key = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py']);
      const queued = join(sb.repo, '.gen/queue', `${key}.json`);
      // same work order (so the same key), other constraints (so another digest)
      const job = readJson<{ constraints: { max_file_bytes: number } }>(queued);
      job.constraints.max_file_bytes = 1000;
      const crafted = `${JSON.stringify(job)}\n`;
      const target = join(sb.repo, '.gen', state, `${key}.json`);
      const { rmSync } = await import('node:fs');
      rmSync(queued);
      writeFileSync(target, crafted);
      const before = snapshot(sb.repo, ['.git']);

      const r = await sb.genjob(['mint', '-m', TIMEOUT_INSTRUCTION, 'src/user.py']);
      expect(r.exitCode).toBe(4);
      expect(r.stderr).toMatch(
        new RegExp(
          `^genjob: EGJ_KEY_CONFLICT: ${target}: key ${key.slice(0, 12)} already names a different job \\(digest [0-9a-f]{12}, this one [0-9a-f]{12}\\); nothing was written\\n$`,
        ),
      );
      expect(snapshot(sb.repo, ['.git'])).toEqual(before);
      expect(readFileSync(target, 'utf8')).toBe(crafted);
    });
  }
});
