// `apply --commit` through the built CLI, around the commit itself: where no commit can be made (no git
// work tree, a bare repository, a root below the work tree's top, no git identity) it is refused before
// anything is written, the whole tree byte-identical; on an unborn branch it makes the root commit; a job
// whose read file HEAD changed is refused though the tree holds it as minted; and a job applied earlier
// without --commit gets its commit later, once (a second run creates nothing).
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-store.js';
import { git, gitEnv } from './git-helpers.js';
import { DEMO_GENERATOR, FIXTURE, runCli, snapshot, TIMEOUT_INSTRUCTION } from './helpers.js';

const OUTPUTS = ['src/user.py', 'tests/test_user.py'];

interface Place {
  base: string;
  /** The genjob root (holds .gen/). */
  root: string;
  env: Record<string, string>;
}

/** The toy repository copied to `base`/`sub`, with .gen/, and a git config (identity unless `noIdentity`). */
function place(sub: string, opts: { noIdentity?: boolean; files?: readonly string[] } = {}): Place {
  const base = tempDir('gj-commit-');
  const root = join(base, sub);
  for (const f of opts.files ?? ['.']) cpSync(join(FIXTURE, f), join(root, f), { recursive: true });
  mkdirSync(join(root, '.gen'));
  const env: Record<string, string> = { ...gitEnv(base), XDG_CACHE_HOME: join(base, 'cache') };
  // no identity: git must not guess one from the passwd entry and host name
  if (opts.noIdentity) writeFileSync(env.GIT_CONFIG_GLOBAL!, '[user]\n\tuseConfigOnly = true\n');
  return { base, root, env };
}

function cli(p: Place, args: readonly string[]) {
  return runCli(args, { cwd: p.root, env: p.env });
}

/** Mint the timeout job (with `extra` mint arguments) and work it: one received job whose outputs are OUTPUTS. */
async function received(p: Place, extra: readonly string[] = []): Promise<string> {
  const mint = await cli(p, ['mint', '--json', '-m', TIMEOUT_INSTRUCTION, ...extra, ...OUTPUTS]);
  expect(mint.exitCode, mint.stderr).toBe(0);
  const work = await cli(p, ['work', '--drain', '--quiet', '--no-sandbox', '--generator', DEMO_GENERATOR]);
  expect(work.exitCode, work.stderr).toBe(0);
  return JSON.parse(mint.stdout).key as string;
}

/** A toy repository with one commit of its files (.gen/ ignored). */
async function committedPlace(): Promise<Place> {
  const p = place('repo');
  await git(p.root, ['init', '-q'], p.env);
  await git(p.root, ['add', '-A'], p.env);
  await git(p.root, ['commit', '-qm', 'the toy repository'], p.env);
  return p;
}

/** A toy repository with one commit of its files and one received job. */
async function committedRepo(): Promise<{ p: Place; key: string }> {
  const p = await committedPlace();
  return { p, key: await received(p) };
}

describe('apply --commit where no commit can be made', () => {
  const cases: Array<{ name: string; rule: RegExp; make: () => Promise<Place> }> = [
    {
      name: 'outside any git work tree',
      rule: /needs the root to be a git work tree \(it is not in a git repository\)/,
      make: async () => place('repo'),
    },
    {
      name: 'in a bare repository',
      rule: /needs the root to be a git work tree \(it is in a bare repository or a \.git directory\)/,
      make: async () => {
        // the toy's config/ directory would clash with a bare repository's config file
        const p = place('repo.git', { files: ['src', 'tests'] });
        await git(p.root, ['init', '-q', '--bare', '.'], p.env);
        return p;
      },
    },
    {
      name: 'below the top of the work tree',
      rule: /needs the root to be the top of its git work tree \(.*\)/,
      make: async () => {
        const p = place('outer/repo');
        await git(join(p.base, 'outer'), ['init', '-q'], p.env);
        return p;
      },
    },
    {
      name: 'with no git identity (on an unborn branch)',
      rule: /needs a git identity \(set user\.name and user\.email\): .*auto-detection is disabled/,
      make: async () => {
        const p = place('repo', { noIdentity: true });
        await git(p.root, ['init', '-q'], p.env);
        return p;
      },
    },
  ];

  it.each(cases)(
    'is refused $name before anything is written (exit 2, the whole tree unchanged)',
    async (c) => {
      const p = await c.make();
      const key = await received(p);
      const before = snapshot(p.base, []);
      for (const args of [
        ['apply', '--all', '--commit'],
        ['apply', key.slice(0, 12), '--commit'],
      ]) {
        const r = await cli(p, args);
        expect(r.exitCode, r.stderr).toBe(2);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(
          new RegExp(
            `^genjob: EGJ_COMMIT_UNAVAILABLE: ${p.root}: apply --commit ${c.rule.source}; nothing was applied \\(drop --commit to apply without committing\\)\\n$`,
          ),
        );
        expect(snapshot(p.base, [])).toEqual(before);
      }
    },
  );
});

describe('apply --commit on an unborn branch', () => {
  it('makes the root commit of a job that creates its files; a job editing uncommitted files is refused', async () => {
    const p = place('repo');
    await git(p.root, ['init', '-q'], p.env);
    const mint = await cli(p, ['mint', '--json', '-m', 'Write NEW.md', '--create', 'NEW.md']);
    expect(mint.exitCode, mint.stderr).toBe(0);
    const created = JSON.parse(mint.stdout).key as string;
    const work = await cli(p, [
      'work',
      '--drain',
      '--quiet',
      '--no-sandbox',
      '--generator',
      "printf 'new\\n' > NEW.md",
    ]);
    expect(work.exitCode, work.stderr).toBe(0);
    const r = await cli(p, ['apply', created, '--commit']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await git(p.root, ['rev-list', '--parents', 'HEAD'], p.env)).toMatch(/^[0-9a-f]{40}$/);
    expect(await git(p.root, ['ls-tree', '-r', '--name-only', 'HEAD'], p.env)).toBe('NEW.md');
    expect(await git(p.root, ['status', '--porcelain', 'NEW.md'], p.env)).toBe('');
    // the timeout job edits files no commit holds: its commit could never pass the gate
    const edit = await received(p);
    const before = snapshot(p.base, []);
    const refused = await cli(p, ['apply', edit, '--commit']);
    expect(refused.exitCode).toBe(4);
    expect(refused.stderr).toMatch(
      /^genjob: EGJ_STALE: HEAD:src\/user\.py: the repository changed under the job \(expected sha256 [0-9a-f]{12}, found absent\); a generated commit must sit on the history its job was minted from \(commit the inputs first, or apply without --commit\); nothing was written\n$/,
    );
    expect(snapshot(p.base, [])).toEqual(before);
  });
});

describe('apply --commit of a job applied without --commit', () => {
  it('makes its commit once: holding only its outputs, with its trailers; a second run creates nothing', async () => {
    const { p, key } = await committedRepo();
    expect((await cli(p, ['apply', key])).exitCode).toBe(0);
    const head = await git(p.root, ['rev-parse', 'HEAD'], p.env);
    const first = await cli(p, ['apply', key.slice(0, 8), '--commit']);
    expect(first.exitCode, first.stderr).toBe(0);
    const commit = await git(p.root, ['rev-parse', 'HEAD'], p.env);
    expect(first.stdout).toBe(
      `${key.slice(0, 12)} already applied, without its commit:\n  committed ${commit.slice(0, 12)}\n`,
    );
    expect(await git(p.root, ['rev-parse', 'HEAD^'], p.env)).toBe(head);
    expect(await git(p.root, ['diff-tree', '-r', '--name-only', '--no-commit-id', 'HEAD'], p.env)).toBe(
      OUTPUTS.join('\n'),
    );
    const trailer = await git(p.root, ['log', '-1', '--format=%(trailers:key=Genjob-Key,valueonly)'], p.env);
    expect(trailer.trim()).toBe(key);
    for (const args of [
      ['apply', key, '--commit'],
      ['apply', '--all', '--commit'],
    ]) {
      const again = await cli(p, [...args, '--json']);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout).results).toEqual([
        { key, status: 'already-applied', commit, committedBefore: true },
      ]);
      expect(await git(p.root, ['rev-parse', 'HEAD'], p.env)).toBe(commit);
    }
    const human = await cli(p, ['apply', key, '--commit']);
    expect(human.stdout).toBe(
      `${key.slice(0, 12)} already applied and committed in ${commit.slice(0, 12)}\n`,
    );
    const all = await cli(p, ['apply', '--all', '--commit']);
    expect(all.stdout).toBe('1 applied job(s) already committed\n');
  });

  it('apply --all --commit commits applied jobs that lack their commit, next to newly received ones', async () => {
    const { p, key } = await committedRepo();
    expect((await cli(p, ['apply', key])).exitCode).toBe(0);
    const mint = await cli(p, ['mint', '--json', '-m', 'Explain the config in the README', 'README.md']);
    const readme = JSON.parse(mint.stdout).key as string;
    expect(
      (await cli(p, ['work', '--drain', '--quiet', '--no-sandbox', '--generator', DEMO_GENERATOR])).exitCode,
    ).toBe(0);
    const r = await cli(p, ['apply', '--all', '--commit', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const byKey = new Map(JSON.parse(r.stdout).results.map((x: { key: string }) => [x.key, x]));
    expect(byKey.get(key)).toMatchObject({
      status: 'already-applied',
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
    expect(byKey.get(readme)).toMatchObject({
      status: 'applied',
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
    const keys = await git(
      p.root,
      ['log', '--format=%(trailers:key=Genjob-Key,valueonly)', 'HEAD~2..HEAD'],
      p.env,
    );
    expect(keys.split('\n').filter(Boolean).sort()).toEqual([key, readme].sort());
  });

  it('commits nothing when an output changed in the tree since the apply (EGJ_STALE, exit 4; a line under --all)', async () => {
    const { p, key } = await committedRepo();
    expect((await cli(p, ['apply', key])).exitCode).toBe(0);
    const file = join(p.root, 'src/user.py');
    writeFileSync(file, `${readFileSync(file, 'utf8')}# edited by hand\n`);
    const head = await git(p.root, ['rev-parse', 'HEAD'], p.env);
    const r = await cli(p, ['apply', key, '--commit']);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_STALE: src/user.py: .*; job ${key.slice(0, 12)} was applied without --commit and this output changed since; nothing was committed\\n$`,
      ),
    );
    const all = await cli(p, ['apply', '--all', '--commit']);
    expect(all.exitCode, all.stderr).toBe(0);
    expect(all.stdout).toMatch(
      new RegExp(`^${key.slice(0, 12)} already applied; not committed: src/user.py: `),
    );
    expect(await git(p.root, ['rev-parse', 'HEAD'], p.env)).toBe(head);
  });
});

describe('apply --commit on a HEAD other than the one the job was minted from', () => {
  it('refuses a job whose read file HEAD changed, the tree holding it as minted (EGJ_STALE, exit 4, nothing written)', async () => {
    const p = await committedPlace();
    const key = await received(p, ['--read', 'README.md']);
    // README.md changes in a commit; the tree is put back to the bytes the job read (uncommitted)
    const readme = join(p.root, 'README.md');
    const minted = readFileSync(readme);
    writeFileSync(readme, 'a note the generator never saw\n');
    await git(p.root, ['commit', '-qam', 'README note'], p.env);
    writeFileSync(readme, minted);
    const head = await git(p.root, ['rev-parse', 'HEAD'], p.env);
    const before = snapshot(p.root);
    const r = await cli(p, ['apply', key, '--commit']);
    expect([r.exitCode, r.stderr]).toEqual([
      4,
      expect.stringMatching(/^genjob: EGJ_STALE: HEAD:README\.md: .*; nothing was written\n$/),
    ]);
    expect(snapshot(p.root)).toEqual(before);
    expect(await git(p.root, ['rev-parse', 'HEAD'], p.env)).toBe(head);
  });
});

describe('revert after apply --commit', () => {
  it('says the generated commit stays and the files are uncommitted; revert --commit then commits the revert', async () => {
    const { p, key } = await committedRepo();
    const before = snapshot(p.root);
    expect((await cli(p, ['apply', key, '--commit'])).exitCode).toBe(0);
    const generated = await git(p.root, ['rev-parse', 'HEAD'], p.env);

    const r = await cli(p, ['revert', key]);
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
    expect(r.stdout).toContain(
      `the generated commit ${generated.slice(0, 12)} stays on HEAD: the restored files are uncommitted changes (genjob revert ${key.slice(0, 12)} --commit commits them as its revert)\n`,
    );
    expect(await git(p.root, ['rev-parse', 'HEAD'], p.env)).toBe(generated);
    expect(await git(p.root, ['status', '--porcelain', '--', ...OUTPUTS], p.env)).toBe(
      OUTPUTS.map((f) => ` M ${f}`).join('\n'),
    );

    // after the plain revert, --commit commits what it restored: a revert of the generated commit
    const c = await cli(p, ['revert', key, '--commit', '--json']);
    expect(c.exitCode, c.stderr).toBe(0);
    const revertCommit = await git(p.root, ['rev-parse', 'HEAD'], p.env);
    expect(JSON.parse(c.stdout)).toMatchObject({ status: 'already-reverted', commit: revertCommit });
    expect(await git(p.root, ['rev-parse', 'HEAD^'], p.env)).toBe(generated);
    expect(await git(p.root, ['log', '-1', '--format=%B'], p.env)).toBe(
      `Revert "${TIMEOUT_INSTRUCTION}"\n\nThis reverts commit ${generated}, the generated commit of genjob job ${key.slice(0, 12)}.\n\n` +
        `Genjob-Revert: ${key}\nGenjob-Revert-Receipt: ${await git(p.root, ['log', '-1', '--format=%(trailers:key=Genjob-Receipt,valueonly)', generated], p.env)}`,
    );
    // the revert commit holds the tree as it was before the apply, and leaves nothing uncommitted
    expect(await git(p.root, ['diff', '--stat', `${generated}^`, 'HEAD'], p.env)).toBe('');
    expect(await git(p.root, ['status', '--porcelain', '--', ...OUTPUTS], p.env)).toBe('');
    expect(snapshot(p.root)).toEqual(before);
    // once: a second --commit makes nothing
    const again = await cli(p, ['revert', key, '--commit']);
    expect(again.stdout).toContain(`  already committed in ${revertCommit.slice(0, 12)}`);
    expect(await git(p.root, ['rev-parse', 'HEAD'], p.env)).toBe(revertCommit);

    // the merge gate checks only generated commits: the range still passes
    const gate = await cli(p, ['verify', '--commits', `${generated}^..HEAD`]);
    expect(gate.exitCode, gate.stderr).toBe(0);
    // and applied again with --commit, the job gets a new generated commit (its last commit was a revert)
    const reapply = await cli(p, ['apply', key, '--commit']);
    expect(reapply.exitCode, reapply.stderr).toBe(0);
    expect(await git(p.root, ['rev-parse', 'HEAD^'], p.env)).toBe(revertCommit);
    const trailer = await git(p.root, ['log', '-1', '--format=%(trailers:key=Genjob-Key,valueonly)'], p.env);
    expect(trailer.trim()).toBe(key);
  });

  it('revert --commit of a job that created a file: the revert commit deletes it', async () => {
    const p = await committedPlace();
    const mint = await cli(p, [
      'mint',
      '--json',
      '-m',
      'Add a module',
      '--create',
      'src/extra.py',
      'src/user.py',
    ]);
    const key = JSON.parse(mint.stdout).key as string;
    const gen = "printf 'X = 1\\n' > src/extra.py && printf '# uses extra\\n' >> src/user.py";
    expect((await cli(p, ['work', '--once', '--quiet', '--no-sandbox', '--generator', gen])).exitCode).toBe(
      0,
    );
    expect((await cli(p, ['apply', key, '--commit'])).exitCode).toBe(0);
    const generated = await git(p.root, ['rev-parse', 'HEAD'], p.env);
    const r = await cli(p, ['revert', key, '--commit']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`  committed [0-9a-f]{12}, reverting ${generated.slice(0, 12)}\\n$`));
    expect(await git(p.root, ['diff', '--name-status', 'HEAD^', 'HEAD'], p.env)).toBe(
      'D\tsrc/extra.py\nM\tsrc/user.py',
    );
    expect(await git(p.root, ['status', '--porcelain'], p.env)).toBe('');
  });

  it('revert --commit outside a git work tree is refused before anything is reverted', async () => {
    const p = place('repo');
    const key = await received(p);
    expect((await cli(p, ['apply', key])).exitCode).toBe(0);
    const applied = snapshot(p.root, ['.git']);
    const r = await cli(p, ['revert', key, '--commit']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(
      /EGJ_COMMIT_UNAVAILABLE: .*revert --commit needs the root to be a git work tree .*nothing was reverted/,
    );
    expect(snapshot(p.root, ['.git'])).toEqual(applied);
  });
});
