// The whole loop through the built CLI: mint → work → verify → apply on the toy repository, its
// idempotence (re-mint, re-apply), draining many jobs, the pre-merge hook, and finding the root.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CLI,
  DEMO_GENERATOR,
  genDir,
  makeSandbox,
  mintKey,
  readJson,
  runCli,
  snapshot,
  TIMEOUT_INSTRUCTION,
} from './helpers.js';

const PATHS = ['src/user.py', 'tests/test_user.py'];

describe('the mint → work → verify → apply loop', () => {
  it('applies the demo generator edit to the toy repository and changes nothing else', async () => {
    const sb = await makeSandbox();
    const before = snapshot(sb.repo);
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, PATHS);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);

    const work = await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR]);
    expect(work).toMatchObject({ exitCode: 0, stdout: '1 job(s) taken\n' });
    expect(work.stderr).toMatch(
      // the generator's own lines, relayed named by the job, then the progress line
      new RegExp(
        `^(\\[${key.slice(0, 12)}\\] demo-generator: .*\n)+genjob: \\[1\\/1\\] ${key.slice(0, 12)} received ok \\(\\d+\\.\\d s\\)\n$`,
      ),
    );
    expect(genDir(sb, 'received')).toEqual([`${key}.json`]);

    const verify = await sb.genjob(['verify', key]);
    expect(verify).toMatchObject({
      exitCode: 0,
      stdout: `${key.slice(0, 12)} ok: 2 output(s), epoch 1\n`,
      stderr: '',
    });

    const apply = await sb.genjob(['apply', key]);
    expect(apply).toMatchObject({
      exitCode: 0,
      stdout: `${key.slice(0, 12)} applied 2 file(s):\n  update src/user.py\n  update tests/test_user.py\n`,
      stderr: '',
    });
    const after = snapshot(sb.repo);
    const user = readFileSync(join(sb.repo, 'src/user.py'), 'utf8');
    expect(user).toContain('def fetch_user(user_id, timeout=10):');
    expect(user).toContain('urlopen(f"{API}/{user_id}", timeout=timeout)');
    expect(readFileSync(join(sb.repo, 'tests/test_user.py'), 'utf8')).toContain(
      'def test_fetch_user_has_a_timeout_default():',
    );
    // every other file is byte-identical
    for (const p of PATHS) {
      after.delete(p);
      before.delete(p);
    }
    expect(after).toEqual(before);
    expect(genDir(sb, 'applied')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'received')).toEqual([]);
  });

  it('gives the same key on a second mint of the same work order and writes no new file', async () => {
    const sb = await makeSandbox();
    const first = await sb.genjob(['mint', '--json', '-m', TIMEOUT_INSTRUCTION, ...PATHS]);
    const genBefore = snapshot(join(sb.repo, '.gen'), ['journal.jsonl', 'journal.d']);
    const second = await sb.genjob(['mint', '--json', '-m', TIMEOUT_INSTRUCTION, ...PATHS]);
    const a = JSON.parse(first.stdout);
    const b = JSON.parse(second.stdout);
    expect(first.exitCode).toBe(0);
    expect(second.exitCode).toBe(0);
    expect(a.minted).toBe(true);
    expect(b).toMatchObject({ key: a.key, digest: a.digest, minted: false, state: 'queue' });
    expect(snapshot(join(sb.repo, '.gen'), ['journal.jsonl', 'journal.d'])).toEqual(genBefore);
    expect(genDir(sb, 'queue')).toEqual([`${a.key}.json`]);
  });

  it('says "already applied" and exits 0 when an applied key is applied again, writing nothing', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, PATHS);
    await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR]);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    const tree = snapshot(sb.repo, ['.git']);
    const again = await sb.genjob(['apply', key.slice(0, 8)]);
    expect(again).toMatchObject({ exitCode: 0, stdout: `${key.slice(0, 12)} already applied\n`, stderr: '' });
    const treeAfter = snapshot(sb.repo, ['.git']);
    // only the journal may grow
    for (const t of [tree, treeAfter])
      for (const path of t.keys()) if (path.startsWith('.gen/journal')) t.delete(path);
    expect(treeAfter).toEqual(tree);
  });

  it('receives all 20 jobs with --drain and leaves queue/ and running/ empty', async () => {
    const sb = await makeSandbox();
    const keys = new Set<string>();
    for (let i = 0; i < 20; i++) keys.add(await mintKey(sb, `Note number ${i} in the README`, ['README.md']));
    expect(keys.size).toBe(20);
    const r = await sb.genjob(['work', '--drain', '--concurrency', '4', '--generator', DEMO_GENERATOR]);
    expect(r).toMatchObject({ exitCode: 0, stdout: '20 job(s) taken\n' });
    expect(genDir(sb, 'queue')).toEqual([]);
    expect(genDir(sb, 'running')).toEqual([]);
    expect(genDir(sb, 'received')).toEqual([...keys].map((k) => `${k}.json`).sort());
    expect(genDir(sb, 'receipts')).toEqual([...keys].map((k) => `${k}.json`).sort());
    for (const k of keys) expect(readJson(join(sb.repo, '.gen/receipts', `${k}.json`)).status).toBe('ok');
    expect(genDir(sb, 'dead')).toEqual([]);
  });

  it('passes `verify --all && apply --all` as a pre-merge hook over several jobs, then finds nothing left', async () => {
    const sb = await makeSandbox();
    const k1 = await mintKey(sb, TIMEOUT_INSTRUCTION, PATHS);
    const k2 = await mintKey(sb, 'Document the demo in the README', ['README.md']);
    const k3 = await mintKey(sb, 'Add a changelog', [], ['--create', 'CHANGELOG.md']);
    expect((await sb.genjob(['work', '--drain', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);

    const hook = await sb.script(
      'pre-merge',
      `set -e\ngenjob() { node ${JSON.stringify(CLI)} "$@"; }\ngenjob verify --all\ngenjob apply --all`,
    );
    const { execa } = await import('execa');
    const r = await execa(hook, { cwd: sb.repo, env: { XDG_CACHE_HOME: sb.cache }, reject: false });
    expect(r.exitCode).toBe(0);
    const short = [k1, k2, k3].sort().map((k) => k.slice(0, 12));
    for (const s of short) expect(r.stdout).toContain(`${s} ok: `);
    for (const s of short) expect(r.stdout).toMatch(new RegExp(`${s} applied \\d file\\(s\\):`));
    expect(readFileSync(join(sb.repo, 'CHANGELOG.md'), 'utf8')).toBe(
      '<!--\n  genjob instruction (demo generator fallback):\n  Add a changelog\n-->\n',
    );
    expect(genDir(sb, 'applied')).toHaveLength(3);

    const rerun = await execa(hook, { cwd: sb.repo, env: { XDG_CACHE_HOME: sb.cache }, reject: false });
    expect(rerun).toMatchObject({
      exitCode: 0,
      stdout: 'nothing to verify (no received jobs)\nnothing to apply (no received jobs)',
    });
  });
});

describe('finding the repository root', () => {
  it('works from another directory with --root DIR', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, PATHS);
    const elsewhere = { cwd: sb.base };
    const status = await sb.genjob(['status', '--json', '--root', 'repo'], elsewhere);
    expect(status.exitCode).toBe(0);
    expect(JSON.parse(status.stdout).jobs.map((j: { key: string }) => j.key)).toEqual([key]);
    expect(
      (await sb.genjob(['work', '--once', '--root', sb.repo, '--generator', DEMO_GENERATOR], elsewhere))
        .exitCode,
    ).toBe(0);
    expect((await sb.genjob(['verify', '--root', sb.repo, key], elsewhere)).exitCode).toBe(0);
    expect((await sb.genjob(['apply', '--root', sb.repo, key], elsewhere)).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, 'src/user.py'), 'utf8')).toContain('timeout=10');
  });

  it('works from a subdirectory of the repository, with paths relative to it', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['mint', '--json', '-m', TIMEOUT_INSTRUCTION, 'user.py'], {
      cwd: join(sb.repo, 'src'),
    });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).inputs.map((i: { path: string }) => i.path)).toEqual(['src/user.py']);
  });

  it('exits 2 outside any repository, naming the directory and --root', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'genjob-e2e-norepo-'));
    try {
      const r = await runCli(['status'], { cwd: outside, env: { XDG_CACHE_HOME: join(outside, 'cache') } });
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toBe(
        `genjob: EGJ_NO_ROOT: ${outside}: no .gen/ or .git/ here or above; run inside a repository or pass --root DIR\n`,
      );
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('exits 2 when --root names no directory', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['status', '--root', join(sb.base, 'nope')]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(
      `genjob: EGJ_BAD_ROOT: ${join(sb.base, 'nope')}: --root must name an existing directory\n`,
    );
  });
});

describe('work --json queue_empty', () => {
  it('says whether the queue was empty when work stopped: true after --drain emptied it, false with jobs left', async () => {
    const sb = await makeSandbox();
    await mintKey(sb, 'One', ['README.md']);
    await mintKey(sb, 'Two', ['src/user.py']);
    const once = await sb.genjob(['work', '--once', '--json', '--generator', 'true']);
    expect(once.exitCode, once.stderr).toBe(0);
    expect(JSON.parse(once.stdout)).toMatchObject({ ok: true, queue_empty: false });
    const drained = await sb.genjob(['work', '--drain', '--json', '--generator', 'true']);
    expect(drained.exitCode, drained.stderr).toBe(0);
    expect(JSON.parse(drained.stdout)).toMatchObject({ ok: true, queue_empty: true });
    expect(JSON.parse(drained.stdout).outcomes).toHaveLength(1);
    const idle = await sb.genjob(['work', '--once', '--json', '--generator', 'true']);
    expect(JSON.parse(idle.stdout)).toMatchObject({ ok: true, outcomes: [], queue_empty: true });
  });
});
