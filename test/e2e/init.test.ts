// mint says once that .gitignore does not ignore .gen/ and offers `genjob init`, which creates .gen/
// and adds it to .gitignore; status, show and verify never create .gen/.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSandbox } from './helpers.js';

const NOTE =
  'genjob: note: .gitignore does not ignore .gen/ (the queue and its results); `genjob init` adds it (said once)\n';

describe('.gen/ and .gitignore', () => {
  it('mint says once that .gen/ is not ignored; init adds it and creates .gen/', async () => {
    const sb = await makeSandbox();
    rmSync(join(sb.repo, '.gitignore'));
    writeFileSync(join(sb.repo, '.gitignore'), '*.pyc');
    const first = await sb.genjob(['mint', '-m', 'One', 'README.md']);
    expect(first.exitCode).toBe(0);
    expect(first.stderr).toBe(`${NOTE}minted: 1 path(s) → .gen/queue/${first.stdout.trim()}.json\n`);
    // another file: a second job on README.md would be warned about (two live jobs allowing one file)
    const second = await sb.genjob(['mint', '-m', 'Two', 'src/user.py']);
    expect(second.exitCode).toBe(0);
    expect(second.stderr).toBe(`minted: 1 path(s) → .gen/queue/${second.stdout.trim()}.json\n`);

    const init = await sb.genjob(['init']);
    expect(init.exitCode).toBe(0);
    expect(init.stdout).toBe(`${join(sb.repo, '.gen')} already exists\nadded .gen/ to .gitignore\n`);
    expect(readFileSync(join(sb.repo, '.gitignore'), 'utf8')).toBe('*.pyc\n.gen/\n');
    expect((await sb.genjob(['init'])).stdout).toMatch(/\.gitignore already ignores \.gen\/\n$/);
  });

  it('init creates .gen/ in a fresh repository', async () => {
    const sb = await makeSandbox();
    rmSync(join(sb.repo, '.gitignore'));
    const r = await sb.genjob(['init', '--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, created: true, gitignore_added: true });
    expect(existsSync(join(sb.repo, '.gen', 'queue'))).toBe(true);
    expect(readFileSync(join(sb.repo, '.gitignore'), 'utf8')).toBe('.gen/\n');
  });

  it('init outside any repository creates .gen/ in the current directory, as git init would', async () => {
    const sb = await makeSandbox({ git: false });
    rmSync(join(sb.repo, '.gitignore'));
    const r = await sb.genjob(['init']);
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
    expect(r.stdout).toBe(`created ${join(sb.repo, '.gen')}\nadded .gen/ to .gitignore\n`);
    expect(existsSync(join(sb.repo, '.gen', 'queue'))).toBe(true);
    // and from then on every command finds the root there
    expect((await sb.genjob(['status'])).exitCode).toBe(0);
  });

  it('status, show and verify never create .gen/', async () => {
    const sb = await makeSandbox();
    expect((await sb.genjob(['status'])).exitCode).toBe(0);
    expect((await sb.genjob(['show', 'abcd'])).exitCode).toBe(2);
    expect((await sb.genjob(['verify', '--all'])).exitCode).toBe(0);
    expect(existsSync(join(sb.repo, '.gen'))).toBe(false);
  });
});
