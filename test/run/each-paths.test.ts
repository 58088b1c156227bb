// The paths a fan-out expands over (src/run/each-paths.ts): git-tracked regular files (not untracked
// ones, symlinks or files outside the glob), sorted; a glob over nothing and a list naming an untracked
// or malformed path are bad usage (exit 2).
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { GenjobError } from '../../src/core/errors.js';
import { eachListed, eachMatch } from '../../src/run/each-paths.js';
import { tempDir } from '../helpers/temp-store.js';

async function repo(): Promise<string> {
  const root = tempDir('genjob-each-');
  for (const p of ['src/b.py', 'src/a.py', 'src/pkg/c.py', 'src/readme.md', 'top.py', 'src/Z.py']) {
    mkdirSync(join(root, p, '..'), { recursive: true });
    writeFileSync(join(root, p), `# ${p}\n`);
  }
  symlinkSync('a.py', join(root, 'src', 'link.py'));
  await execa('git', ['init', '-q'], { cwd: root });
  await execa('git', ['add', '-A'], { cwd: root });
  writeFileSync(join(root, 'src', 'untracked.py'), 'x\n');
  return root;
}

async function refusal(p: Promise<unknown>): Promise<GenjobError> {
  try {
    await p;
  } catch (err) {
    return err as GenjobError;
  }
  throw new Error('expected a refusal');
}

describe('--each', () => {
  it('matches tracked regular files only, sorted, with ** across directories', async () => {
    const root = await repo();
    expect(await eachMatch(root, 'src/*.py')).toEqual(['src/Z.py', 'src/a.py', 'src/b.py']);
    expect(await eachMatch(root, 'src/**/*.py')).toEqual([
      'src/Z.py',
      'src/a.py',
      'src/b.py',
      'src/pkg/c.py',
    ]);
    expect(await eachMatch(root, '**/*.py')).toEqual([
      'src/Z.py',
      'src/a.py',
      'src/b.py',
      'src/pkg/c.py',
      'top.py',
    ]);
  });

  it('refuses a glob that matches nothing (EGJ_NO_MATCH, exit 2)', async () => {
    const root = await repo();
    const err = await refusal(eachMatch(root, 'lib/*.py'));
    expect([err.code, err.exitCode]).toEqual(['EGJ_NO_MATCH', 2]);
    expect((await refusal(eachMatch(root, 'src/untracked.py'))).code).toBe('EGJ_NO_MATCH');
    expect((await refusal(eachMatch(root, ' '))).code).toBe('EGJ_USAGE');
  });

  it('refuses outside a git work tree', async () => {
    const err = await refusal(eachMatch(tempDir('genjob-each-'), '*.py'));
    expect([err.code, err.message]).toEqual([
      'EGJ_USAGE',
      expect.stringMatching(/--each takes the files git tracks/),
    ]);
  });
});

describe('--each-file', () => {
  it('takes the listed paths, sorted, without repeats or blank lines', async () => {
    const root = await repo();
    const list = join(tempDir('genjob-list-'), 'paths.txt');
    writeFileSync(list, 'top.py\r\n\nsrc/a.py\nsrc/a.py\n');
    expect(await eachListed(root, list)).toEqual(['src/a.py', 'top.py']);
  });

  it.each([
    {
      name: 'an untracked file',
      text: 'src/untracked.py\n',
      code: 'EGJ_BAD_PATH',
      rule: /1 listed path\(s\) are not regular files git tracks \("src\/untracked\.py"\)/,
    },
    {
      name: 'a tracked symlink',
      text: 'src/link.py\n',
      code: 'EGJ_BAD_PATH',
      rule: /not regular files git tracks/,
    },
    {
      name: 'a path with ..',
      text: 'src/a.py\n../x\n',
      code: 'EGJ_BAD_PATH',
      rule: /paths\.txt:2: "\.\.\/x": /,
    },
    { name: 'nothing', text: '\n\n', code: 'EGJ_NO_MATCH', rule: /lists no path/ },
  ])('refuses a list with $name', async ({ text, code, rule }) => {
    const root = await repo();
    const list = join(tempDir('genjob-list-'), 'paths.txt');
    writeFileSync(list, text);
    const err = await refusal(eachListed(root, list));
    expect(err.code).toBe(code);
    expect(err.message).toMatch(rule);
  });

  it('refuses a list it cannot read', async () => {
    const err = await refusal(eachListed(await repo(), join(tempDir('genjob-list-'), 'missing.txt')));
    expect(err.code).toBe('EGJ_BAD_INPUT');
  });
});
