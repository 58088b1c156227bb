// Material in git, the parts beside the gate: concurrent pushers of different keys both land (one ref
// per key), a remote holding other material for a key is left alone and reported (push exits 4), pull
// never touches .gen/ and names each hostile ref it skips (exit 0) while the good keys stay usable, and
// `hook install` keeps a hook that is not exactly genjob's unless --force, and the pre-push hook it
// writes stops a tampered push, and a new branch that un-pins a key, pushed by name or by URL; the
// pre-merge-commit hook comes with merge.ff=false, so a merge git could fast-forward is checked too;
// `hook uninstall` removes only genjob's own hook unless --force, and puts back the merge.ff install
// replaced only while merge.ff is still the false install set.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeReceived, git, gitEnv } from './git-helpers.js';
import { runCli } from './helpers.js';

let bases: string[] = [];
afterEach(() => {
  for (const b of bases) rmSync(b, { recursive: true, force: true });
  bases = [];
});

/** The line `hook install --pre-merge-commit` adds after the hook's. */
const MERGE_FF = (before: string) =>
  `set merge.ff=false in this repository's config (${before}): git runs no pre-merge-commit hook on a fast-forward, so every merge now makes a merge commit for the hook to check (git merge --ff or --ff-only skips it, as --no-verify does)`;

async function remoteAndClones(names: string[]) {
  const base = mkdtempSync(join(tmpdir(), 'gj-mat-'));
  bases.push(base);
  const env = gitEnv(base);
  const bare = join(base, 'origin.git');
  await git(base, ['init', '-q', '--bare', bare], env);
  const seed = join(base, 'seed');
  await git(base, ['init', '-q', seed], env);
  writeFileSync(join(seed, '.gitignore'), '.gen/\n');
  await git(seed, ['add', '-A'], env);
  await git(seed, ['commit', '-qm', 'seed'], env);
  await git(seed, ['push', '-q', `file://${bare}`, 'main'], env);
  const clones: Record<string, string> = {};
  for (const n of names) {
    clones[n] = join(base, n);
    await git(base, ['clone', '-q', `file://${bare}`, clones[n]!], env);
  }
  const cli = (cwd: string, args: string[]) =>
    runCli(args, { cwd, env: { ...env, XDG_CACHE_HOME: join(base, 'cache') } });
  return { base, env, bare, clones, cli };
}

async function remoteKeys(bare: string, env: Record<string, string>): Promise<string[]> {
  const out = await git(bare, ['for-each-ref', '--format=%(refname)', 'refs/genjob/'], env);
  return out
    .split('\n')
    .filter(Boolean)
    .map((r) => r.replace('refs/genjob/keys/', ''));
}

describe('genjob push', () => {
  it('lands all 100 keys when two clones push 50 different keys each at the same time', async () => {
    const { env, bare, clones, cli } = await remoteAndClones(['x', 'y']);
    const xs = fakeReceived(clones.x!, 50, 'x');
    const ys = fakeReceived(clones.y!, 50, 'y');
    const [px, py] = await Promise.all([
      cli(clones.x!, ['push', '--json']),
      cli(clones.y!, ['push', '--json']),
    ]);
    expect(px.exitCode, px.stderr).toBe(0);
    expect(py.exitCode, py.stderr).toBe(0);
    expect(JSON.parse(px.stdout).created).toHaveLength(50);
    expect(JSON.parse(py.stdout).created).toHaveLength(50);
    expect(await remoteKeys(bare, env)).toEqual([...xs, ...ys].sort());
  });

  it('leaves a key the remote holds with other material alone and exits 4, after pushing the rest', async () => {
    const { env, bare, clones, cli } = await remoteAndClones(['x', 'y']);
    const [key] = fakeReceived(clones.x!, 1, 'same');
    expect((await cli(clones.x!, ['push'])).exitCode).toBe(0);
    const before = await git(bare, ['rev-parse', `refs/genjob/keys/${key}`], env);
    // y holds the same job with another receipt (another worker's run), plus a key of its own
    fakeReceived(clones.y!, 1, 'same');
    const receipt = join(clones.y!, '.gen/receipts', `${key}.json`);
    writeFileSync(receipt, readFileSync(receipt, 'utf8').replace('"host":"bench"', '"host":"other"'));
    const [own] = fakeReceived(clones.y!, 1, 'own');
    const r = await cli(clones.y!, ['push']);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toBe(
      `genjob: EGJ_PUSH_CONFLICT: origin: refs/genjob/keys/${key} holds other material for this key; it was left alone (1 key(s) pushed to origin, 0 already there)\n`,
    );
    expect(await git(bare, ['rev-parse', `refs/genjob/keys/${key}`], env)).toBe(before);
    expect(await remoteKeys(bare, env)).toEqual([key, own].sort());
  });
});

describe('genjob push, what it sends', () => {
  it('sends only the keys .gen/ holds (a dropped job stays home) and --key limits it', async () => {
    const { base, env, bare, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    const [a, b, c] = fakeReceived(x, 3, 'limits');
    const one = await cli(x, ['push', '--key', b!.slice(0, 8)]);
    expect(one).toMatchObject({ exitCode: 0, stdout: '1 key(s) pushed to origin, 0 already there\n' });
    expect(await remoteKeys(bare, env)).toEqual([b]);
    expect((await cli(x, ['push'])).stdout).toBe('2 key(s) pushed to origin, 1 already there\n');
    // a second remote, after a is dropped here: a's ref built for the first remote is not sent
    expect((await cli(x, ['drop', a!])).exitCode).toBe(0);
    const second = join(base, 'second.git');
    await git(base, ['init', '-q', '--bare', second], env);
    const r = await cli(x, ['push', `file://${second}`]);
    expect(r).toMatchObject({
      exitCode: 0,
      stdout: `2 key(s) pushed to file://${second}, 0 already there\n`,
    });
    expect(await remoteKeys(second, env)).toEqual([b, c].sort());
  });
});

describe('genjob push with nothing new', () => {
  it('runs no git push; a key gone from the remote, or a receipt changed in place, is noticed', async () => {
    const { env, bare, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    const [a, b] = fakeReceived(x, 3, 'again');
    expect((await cli(x, ['push'])).stdout).toBe('3 key(s) pushed to origin, 0 already there\n');
    // every receive-pack git starts for a push to origin leaves a mark
    const marker = join(x, '..', 'receive-pack-ran');
    await git(x, ['config', 'remote.origin.receivepack', `touch '${marker}' && git-receive-pack`], env);
    const again = await cli(x, ['push', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ ok: true, built: 0, created: [], conflicts: [] });
    expect(existsSync(marker)).toBe(false);
    // the remote lost a key: it is sent again
    await git(bare, ['update-ref', '-d', `refs/genjob/keys/${a}`], env);
    expect((await cli(x, ['push'])).stdout).toBe('1 key(s) pushed to origin, 2 already there\n');
    expect(existsSync(marker)).toBe(true);
    rmSync(marker);
    expect((await cli(x, ['push'])).stdout).toBe('0 key(s) pushed to origin, 3 already there\n');
    expect(existsSync(marker)).toBe(false);
    // a receipt rewritten in place, same size, its mtime put back: only its ctime tells
    const receipt = join(x, '.gen/receipts', `${b}.json`);
    const { mtimeNs } = statSync(receipt, { bigint: true });
    writeFileSync(receipt, readFileSync(receipt, 'utf8').replace('"host":"bench"', '"host":"bunch"'));
    const ns = String(mtimeNs).padStart(10, '0');
    await execa('touch', ['-m', `--date=@${ns.slice(0, -9)}.${ns.slice(-9)}`, receipt]);
    expect(statSync(receipt, { bigint: true }).mtimeNs).toBe(mtimeNs);
    // a push of another key rewrites push's record after the change (b's entry kept as it was)
    await git(bare, ['update-ref', '-d', `refs/genjob/keys/${a}`], env);
    expect((await cli(x, ['push', '--key', a!])).stdout).toBe('1 key(s) pushed to origin, 0 already there\n');
    const changed = await cli(x, ['push']);
    expect(changed.exitCode).toBe(4);
    expect(changed.stderr).toMatch(
      new RegExp(`^genjob: EGJ_PUSH_CONFLICT: origin: refs/genjob/keys/${b} holds other material`),
    );
  });
});

describe('genjob pull', () => {
  it('leaves .gen/ alone: a job held here with another receipt keeps it, and nothing pulled becomes a job', async () => {
    const { clones, cli } = await remoteAndClones(['x', 'y']);
    const [key, other] = fakeReceived(clones.x!, 2, 'same');
    expect((await cli(clones.x!, ['push'])).exitCode).toBe(0);
    fakeReceived(clones.y!, 1, 'same');
    const receipt = join(clones.y!, '.gen/receipts', `${key}.json`);
    writeFileSync(receipt, readFileSync(receipt, 'utf8').replace('"host":"bench"', '"host":"other"'));
    const mine = readFileSync(receipt);
    const r = await cli(clones.y!, ['pull', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: true,
      remote: 'origin',
      keys: [key, other].sort(),
      refused: [],
    });
    expect(readFileSync(receipt)).toEqual(mine);
    expect(existsSync(join(clones.y!, '.gen/received', `${other}.json`))).toBe(false);
    const status = await cli(clones.y!, ['status', '--json']);
    expect(JSON.stringify(JSON.parse(status.stdout))).not.toContain(other!);
  });

  // an output named .git (in any spelling a checkout honours) is refused by git's own checks before any
  // ref moves: git-pull-bounds.test.ts
  const hostile = [
    {
      name: 'a symlink among the outputs',
      entry: (blob: string) => `120000 blob ${blob}\tevil`,
      dir: 'out',
      rule: /"out\/evil" has mode 120000: only regular files \(100644\) are accepted/,
    },
    {
      name: 'an executable output',
      entry: (blob: string) => `100755 blob ${blob}\trun.sh`,
      dir: 'out',
      rule: /"out\/run.sh" has mode 100755/,
    },
    {
      name: 'an unexpected top-level entry',
      entry: (blob: string) => `100644 blob ${blob}\thooks.sh`,
      dir: '',
      rule: /unexpected entry "hooks.sh" \(mode 100644\) at the top/,
    },
  ];
  for (const h of hostile) {
    it(`skips ${h.name}, naming the ref and the rule (exit 0), and keeps the good keys`, async () => {
      const { env, bare, clones, cli } = await remoteAndClones(['x', 'c', 'b']);
      const [victim, good] = fakeReceived(clones.x!, 2, 'h');
      expect((await cli(clones.x!, ['push'])).exitCode).toBe(0);
      // a third clone rewrites the victim's material with one hostile entry added
      const c = clones.c!;
      await git(c, ['fetch', '-q', 'origin', '+refs/genjob/*:refs/genjob/*'], env);
      const ref = `refs/genjob/keys/${victim}`;
      const blob = await git(c, ['hash-object', '-w', '--stdin'], env, 'x');
      const top = (await git(c, ['ls-tree', ref], env)).split('\n');
      let tree: string;
      if (h.dir === 'out') {
        const outLine = top.find((l) => l.endsWith('\tout'))!;
        const outTree = outLine.split(/\s/)[2]!;
        const inner = (await git(c, ['ls-tree', outTree], env)).split('\n');
        const newOut = await git(c, ['mktree'], env, `${[...inner, h.entry(blob)].join('\n')}\n`);
        tree = await git(
          c,
          ['mktree'],
          env,
          `${top.map((l) => (l === outLine ? l.replace(outTree, newOut) : l)).join('\n')}\n`,
        );
      } else tree = await git(c, ['mktree'], env, `${[...top, h.entry(blob)].join('\n')}\n`);
      const commit = await git(c, ['commit-tree', tree, '-m', 'hostile'], env);
      await git(c, ['push', '-q', '--force', 'origin', `${commit}:${ref}`], env);
      void bare;
      const r = await cli(clones.b!, ['pull']);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toBe('1 key(s) of verification material from origin, 1 ref(s) skipped\n');
      expect(r.stderr).toMatch(new RegExp(`^genjob: warning: origin refs/genjob/keys/${victim}: `));
      expect(r.stderr).toMatch(h.rule);
      expect(r.stderr).toMatch(/; skipped \(a gate that needs this key fails\)\n$/);
      const json = JSON.parse((await cli(clones.b!, ['pull', '--json'])).stdout);
      expect(json.keys).toEqual([good]);
      expect(json.refused).toEqual([
        { ref: `refs/genjob/keys/${victim}`, rule: expect.stringMatching(h.rule) },
      ]);
      expect(
        await git(clones.b!, ['ls-files', '--others', '--ignored', '--exclude-standard', '--directory'], env),
      ).toBe('');
    });
  }

  it('skips a key ref pointing at a blob, and a ref that names no key', async () => {
    const { env, clones, cli } = await remoteAndClones(['c', 'b']);
    const blob = await git(clones.c!, ['hash-object', '-w', '--stdin'], env, 'x');
    await git(clones.c!, ['push', '-q', 'origin', `${blob}:refs/genjob/keys/${'a'.repeat(64)}`], env);
    await git(clones.c!, ['push', '-q', 'origin', 'HEAD:refs/genjob/keys/not-a-key'], env);
    const r = await cli(clones.b!, ['pull']);
    expect(r).toMatchObject({
      exitCode: 0,
      stdout: '0 key(s) of verification material from origin, 2 ref(s) skipped\n',
      stderr:
        'genjob: warning: origin refs/genjob/keys/not-a-key: the ref does not name one key (refs/genjob/keys/<64 hex>); skipped (a gate that needs this key fails)\n' +
        `genjob: warning: origin refs/genjob/keys/${'a'.repeat(64)}: points at a blob, not a commit; skipped (a gate that needs this key fails)\n`,
    });
  });
});

describe('genjob hook install', () => {
  it('keeps a foreign hook (exit 4) unless --force, rewrites its own, and keeps its own once edited', async () => {
    const { clones, cli } = await remoteAndClones(['x']);
    const hook = join(clones.x!, '.git/hooks/pre-push');
    writeFileSync(hook, '#!/bin/sh\necho the team hook\n');
    const refused = await cli(clones.x!, ['hook', 'install']);
    expect(refused).toMatchObject({
      exitCode: 4,
      stderr: `genjob: EGJ_HOOK_EXISTS: ${hook}: a pre-push hook genjob did not write (or one edited since) is there; merge the gate into it by hand or pass --force to replace it\n`,
    });
    expect(readFileSync(hook, 'utf8')).toBe('#!/bin/sh\necho the team hook\n');
    expect(await cli(clones.x!, ['hook', 'install', '--force'])).toMatchObject({
      exitCode: 0,
      stdout: `replaced ${hook}\n`,
    });
    // the same hook again: nothing changed, and it says so
    expect(await cli(clones.x!, ['hook', 'install'])).toMatchObject({
      exitCode: 0,
      stdout: `unchanged ${hook}\n`,
    });
    expect(JSON.parse((await cli(clones.x!, ['hook', 'install', '--json'])).stdout)).toMatchObject({
      action: 'unchanged',
    });
    expect(await cli(clones.x!, ['hook', 'install', '--pre-merge-commit'])).toMatchObject({
      exitCode: 0,
      stdout: `installed ${join(clones.x!, '.git/hooks/pre-merge-commit')}\n${MERGE_FF('it set none')}\n`,
    });
    // a team merges its own check into genjob's hook: the marker is still there, the bytes are not genjob's
    const merged = readFileSync(hook, 'utf8').replace(
      'remote="$1"',
      'remote="$1"\n./ci/team-check.sh || exit 1',
    );
    writeFileSync(hook, merged);
    expect(await cli(clones.x!, ['hook', 'install'])).toMatchObject({
      exitCode: 4,
      stderr: `genjob: EGJ_HOOK_EXISTS: ${hook}: a pre-push hook genjob did not write (or one edited since) is there; merge the gate into it by hand or pass --force to replace it\n`,
    });
    expect(readFileSync(hook, 'utf8')).toBe(merged);
  });

  it('lets a new branch of generated commits through the pre-push hook before genjob push ran (apply --commit recorded the material)', async () => {
    const { env, bare, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    expect((await cli(x, ['hook', 'install'])).exitCode).toBe(0);
    await git(x, ['checkout', '-q', '-b', 'topic'], env);
    const [key] = fakeReceived(x, 1, 'hooked');
    const apply = await cli(x, ['apply', '--all', '--commit']);
    expect(apply.exitCode, apply.stderr).toBe(0);
    expect(await git(x, ['rev-parse', `refs/genjob/keys/${key}`], env)).toMatch(/^[0-9a-f]{40}$/);
    const push = await execa('git', ['push', 'origin', 'topic'], {
      cwd: x,
      env: { ...env, XDG_CACHE_HOME: join(x, '..', 'cache') },
      reject: false,
    });
    expect(push.exitCode, String(push.stderr)).toBe(0);
    expect(`${push.stdout}${push.stderr}`).toContain(`ok: job ${key!.slice(0, 12)}, exactly its 1 output(s)`);
    expect(await git(bare, ['rev-parse', 'topic'], env)).toBe(await git(x, ['rev-parse', 'HEAD'], env));
  });

  it('judges a new branch pushed by URL under the policy of the remote it leaves, not its own: an unpinned key does not let an unsigned commit through', async () => {
    const { base, env, bare, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    const pub = JSON.parse((await cli(x, ['keygen', '--json', '--out', join(base, 'host.key')])).stdout)
      .publicKey as string;
    expect((await cli(x, ['trust', 'add', 'host', pub])).exitCode).toBe(0);
    await git(x, ['add', 'genjob-trust.json'], env);
    await git(x, ['commit', '-qm', 'pin host'], env);
    await git(x, ['push', '-q', 'origin', 'main'], env);
    expect((await cli(x, ['hook', 'install'])).exitCode).toBe(0);
    // the branch drops the pin, then commits an unsigned generated result
    await git(x, ['checkout', '-q', '-b', 'unpinned'], env);
    expect((await cli(x, ['trust', 'remove', 'host'])).exitCode).toBe(0);
    await git(x, ['commit', '-qam', 'drop the pin'], env);
    fakeReceived(x, 1, 'unsigned');
    const apply = await cli(x, ['apply', '--all', '--commit']);
    expect(apply.exitCode, apply.stderr).toBe(0);
    for (const remote of ['origin', `file://${bare}`]) {
      const push = await execa('git', ['push', remote, 'unpinned'], {
        cwd: x,
        env: { ...env, XDG_CACHE_HOME: join(base, 'cache') },
        reject: false,
      });
      expect(push.exitCode, remote).not.toBe(0);
      expect(String(push.stderr), remote).toContain('genjob: EGJ_SIGNATURE_MISSING: commit ');
    }
    expect(await git(bare, ['for-each-ref', 'refs/heads/unpinned'], env)).toBe('');
  });

  it('writes a pre-merge-commit hook that stops a merge bringing in a generated commit without its receipt, and lets people merge', async () => {
    const { env, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    expect((await cli(x, ['hook', 'install', '--pre-merge-commit'])).exitCode).toBe(0);
    const merge = (branch: string) =>
      execa('git', ['merge', '--no-ff', '-m', `merge ${branch}`, branch], {
        cwd: x,
        env: { ...env, XDG_CACHE_HOME: join(x, '..', 'cache') },
        reject: false,
      });
    const branch = async (name: string, file: string, message: string) => {
      await git(x, ['checkout', '-q', '-b', name, 'main'], env);
      writeFileSync(join(x, file), `${name}\n`);
      await git(x, ['add', file], env);
      await git(x, ['commit', '-qm', message], env);
      await git(x, ['checkout', '-q', 'main'], env);
    };
    await branch('people', 'people.txt', 'a person wrote this');
    await branch(
      'forged',
      'forged.txt',
      `generated\n\nGenjob-Key: ${'b'.repeat(64)}\nGenjob-Receipt: sha256:${'c'.repeat(64)}`,
    );
    const before = await git(x, ['rev-parse', 'HEAD'], env);
    const refused = await merge('forged');
    expect(refused.exitCode).not.toBe(0);
    expect(String(refused.stderr)).toContain('genjob: EGJ_COMMIT_RECEIPT_MISSING: commit ');
    expect(await git(x, ['rev-parse', 'HEAD'], env)).toBe(before);
    await git(x, ['merge', '--abort'], env).catch(() => '');
    await git(x, ['reset', '-q', '--hard', before], env);
    const merged = await merge('people');
    expect(merged.exitCode, String(merged.stderr)).toBe(0);
    expect(await git(x, ['rev-parse', 'HEAD^2'], env)).toBe(await git(x, ['rev-parse', 'people'], env));
  });

  it('forged: a branch with forged trailers that git could fast-forward to is stopped too: the pre-merge-commit hook comes with merge.ff=false', async () => {
    const { env, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    // the pre-push hook alone leaves merging as it was
    expect(await cli(x, ['hook', 'install'])).toMatchObject({ exitCode: 0 });
    expect(await git(x, ['config', '--local', '--default', 'unset', 'merge.ff'], env)).toBe('unset');
    await git(x, ['config', '--local', 'merge.ff', 'only'], env);
    const hook = join(x, '.git/hooks/pre-merge-commit');
    const install = await cli(x, ['hook', 'install', '--pre-merge-commit', '--json']);
    expect(install.exitCode, install.stderr).toBe(0);
    const main = await git(x, ['rev-parse', 'HEAD'], env);
    // both branches start at main: `git merge` would fast-forward to either
    const branch = async (name: string, message: string) => {
      await git(x, ['checkout', '-q', '-b', name, 'main'], env);
      writeFileSync(join(x, `${name}.txt`), `${name}\n`);
      await git(x, ['add', `${name}.txt`], env);
      await git(x, ['commit', '-qm', message], env);
      await git(x, ['checkout', '-q', 'main'], env);
      return git(x, ['rev-parse', name], env);
    };
    const forged = await branch(
      'forged',
      `generated\n\nGenjob-Key: ${'b'.repeat(64)}\nGenjob-Receipt: sha256:${'c'.repeat(64)}`,
    );
    const people = await branch('people', 'a person wrote this');
    const merge = (name: string) =>
      execa('git', ['merge', '-m', `merge ${name}`, name], {
        cwd: x,
        env: { ...env, XDG_CACHE_HOME: join(x, '..', 'cache') },
        reject: false,
      });
    const refused = await merge('forged');
    expect(refused.exitCode).not.toBe(0);
    expect(String(refused.stderr)).toContain(
      `genjob: EGJ_COMMIT_RECEIPT_MISSING: commit ${forged.slice(0, 12)}: no receipt for job bbbbbbbbbbbb here`,
    );
    expect(await git(x, ['rev-parse', 'HEAD'], env)).toBe(main);
    await git(x, ['merge', '--abort'], env).catch(() => '');
    await git(x, ['reset', '-q', '--hard', main], env);
    const merged = await merge('people');
    expect(merged.exitCode, String(merged.stderr)).toBe(0);
    expect(await git(x, ['rev-parse', 'HEAD^1', 'HEAD^2'], env)).toBe(`${main}\n${people}`);
    // what install said it did, and did
    expect(JSON.parse(install.stdout)).toEqual({
      schema: 'genjob/result@1',
      ok: true,
      hook: 'pre-merge-commit',
      file: hook,
      action: 'installed',
      merge_ff: { set: 'false', was: 'only' },
    });
    expect(await git(x, ['config', '--local', 'merge.ff'], env)).toBe('false');
    expect(await cli(x, ['hook', 'install', '--pre-merge-commit'])).toMatchObject({
      exitCode: 0,
      stdout: `unchanged ${hook}\n${MERGE_FF('it was false')}\n`,
    });
    // merge.ff unset since (by hand): installing the same hook again sets it again
    await git(x, ['config', '--local', '--unset', 'merge.ff'], env);
    expect(await cli(x, ['hook', 'install', '--pre-merge-commit'])).toMatchObject({
      exitCode: 0,
      stdout: `unchanged ${hook}\n${MERGE_FF('it set none')}\n`,
    });
  });

  it('writes a pre-push hook that stops a push of a generated commit without its receipt, and lets people push', async () => {
    const { env, bare, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    expect((await cli(x, ['hook', 'install'])).exitCode).toBe(0);
    writeFileSync(join(x, 'human.txt'), 'by a person\n');
    await git(x, ['add', 'human.txt'], env);
    await git(x, ['commit', '-qm', 'a person wrote this'], env);
    await git(x, ['push', '-q', 'origin', 'main'], env);
    writeFileSync(join(x, 'human.txt'), 'claimed to be generated\n');
    const key = 'b'.repeat(64);
    await git(
      x,
      ['commit', '-qam', `generated\n\nGenjob-Key: ${key}\nGenjob-Receipt: sha256:${'c'.repeat(64)}`],
      env,
    );
    const head = await git(x, ['rev-parse', 'HEAD'], env);
    const before = await git(bare, ['rev-parse', 'main'], env);
    const push = await import('execa').then(({ execa }) =>
      execa('git', ['push', 'origin', 'main'], {
        cwd: x,
        env: { ...env, XDG_CACHE_HOME: join(x, '..', 'cache') },
        reject: false,
      }),
    );
    expect(push.exitCode).not.toBe(0);
    expect(String(push.stderr)).toContain(
      `genjob: EGJ_COMMIT_RECEIPT_MISSING: commit ${head.slice(0, 12)}: no receipt for job ${key.slice(0, 12)} here (run genjob pull first; a ref of it that pull skipped is named in pull's warnings)`,
    );
    expect(await git(bare, ['rev-parse', 'main'], env)).toBe(before);
  });
});

describe('genjob hook uninstall', () => {
  const EXISTS = (hook: string, name: string) =>
    `genjob: EGJ_HOOK_EXISTS: ${hook}: a ${name} hook genjob did not write (or one edited since) is there; it was left alone (merge the gate out of it by hand, or pass --force to remove it)\n`;

  it('removes the pre-push hook genjob wrote, says when there is none, and leaves merge.ff alone', async () => {
    const { env, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    const hook = join(x, '.git/hooks/pre-push');
    await git(x, ['config', '--local', 'merge.ff', 'only'], env);
    expect((await cli(x, ['hook', 'install'])).exitCode).toBe(0);
    expect(await cli(x, ['hook', 'uninstall'])).toMatchObject({
      exitCode: 0,
      stdout: `removed ${hook}\n`,
      stderr: '',
    });
    expect(existsSync(hook)).toBe(false);
    expect(JSON.parse((await cli(x, ['hook', 'uninstall', '--json'])).stdout)).toEqual({
      schema: 'genjob/result@1',
      ok: true,
      hook: 'pre-push',
      file: hook,
      action: 'absent',
    });
    expect(await cli(x, ['hook', 'uninstall'])).toMatchObject({
      exitCode: 0,
      stdout: `no pre-push hook at ${hook}\n`,
    });
    expect(await git(x, ['config', '--local', 'merge.ff'], env)).toBe('only');
    // core.hooksPath is respected, as install respects it
    await git(x, ['config', '--local', 'core.hooksPath', 'team-hooks'], env);
    expect(await cli(x, ['hook', 'install'])).toMatchObject({
      exitCode: 0,
      stdout: `installed ${join(x, 'team-hooks/pre-push')}\n`,
    });
    expect(await cli(x, ['hook', 'uninstall'])).toMatchObject({
      exitCode: 0,
      stdout: `removed ${join(x, 'team-hooks/pre-push')}\n`,
    });
    expect(existsSync(join(x, 'team-hooks/pre-push'))).toBe(false);
  });

  it('removes a hook an older genjob wrote (other paths, its sum intact), as install rewrites it', async () => {
    const { clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    const hook = join(x, '.git/hooks/pre-push');
    expect((await cli(x, ['hook', 'install'])).exitCode).toBe(0);
    // the same hook naming another node and CLI, summed as genjob sums it
    const body = readFileSync(hook, 'utf8')
      .replace(/\n# genjob hook sha256:[0-9a-f]{64}\n$/, '\n')
      .replace(/^genjob\(\) \{ .* "\$@"; \}$/m, `genjob() { '/opt/old/node' '/opt/old/genjob.js' "$@"; }`);
    const old = `${body}# genjob hook sha256:${createHash('sha256').update(body).digest('hex')}\n`;
    expect(old).toContain('/opt/old/genjob.js');
    writeFileSync(hook, old);
    expect(await cli(x, ['hook', 'install'])).toMatchObject({ exitCode: 0, stdout: `rewrote ${hook}\n` });
    writeFileSync(hook, old);
    expect(await cli(x, ['hook', 'uninstall'])).toMatchObject({ exitCode: 0, stdout: `removed ${hook}\n` });
    expect(existsSync(hook)).toBe(false);
  });

  it('tamper: keeps a hook genjob did not write, or its own with a check merged in by hand (exit 4), unless --force', async () => {
    const { env, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    const hook = join(x, '.git/hooks/pre-push');
    writeFileSync(hook, '#!/bin/sh\necho the team hook\n');
    expect(await cli(x, ['hook', 'uninstall'])).toMatchObject({
      exitCode: 4,
      stdout: '',
      stderr: EXISTS(hook, 'pre-push'),
    });
    expect(readFileSync(hook, 'utf8')).toBe('#!/bin/sh\necho the team hook\n');
    // genjob's own, with a team's check merged in: the marker is there, the bytes are not genjob's
    expect((await cli(x, ['hook', 'install', '--force'])).exitCode).toBe(0);
    const merged = readFileSync(hook, 'utf8').replace(
      'remote="$1"',
      'remote="$1"\n./ci/team-check.sh || exit 1',
    );
    writeFileSync(hook, merged);
    const refused = await cli(x, ['hook', 'uninstall', '--json']);
    expect(refused.exitCode).toBe(4);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, code: 'EGJ_HOOK_EXISTS' });
    expect(readFileSync(hook, 'utf8')).toBe(merged);
    // the pre-merge-commit hook the same, and merge.ff stays as install left it while the hook stays
    const mergeHook = join(x, '.git/hooks/pre-merge-commit');
    expect((await cli(x, ['hook', 'install', '--pre-merge-commit'])).exitCode).toBe(0);
    writeFileSync(mergeHook, `${readFileSync(mergeHook, 'utf8')}echo edited\n`);
    expect(await cli(x, ['hook', 'uninstall', '--pre-merge-commit'])).toMatchObject({
      exitCode: 4,
      stderr: EXISTS(mergeHook, 'pre-merge-commit'),
    });
    expect(await git(x, ['config', '--local', 'merge.ff'], env)).toBe('false');
    expect(JSON.parse((await cli(x, ['hook', 'uninstall', '--force', '--json'])).stdout)).toMatchObject({
      ok: true,
      action: 'removed-foreign',
    });
    expect(existsSync(hook)).toBe(false);
    expect(await cli(x, ['hook', 'uninstall', '--pre-merge-commit', '--force'])).toMatchObject({
      exitCode: 0,
      stdout: `removed ${mergeHook} (not exactly what genjob wrote: --force)\nunset merge.ff, as it was before hook install set it to false\n`,
    });
    expect(existsSync(mergeHook)).toBe(false);
    expect(await git(x, ['config', '--local', '--default', 'unset', 'merge.ff'], env)).toBe('unset');
  });

  it('puts back the merge.ff install replaced, only while merge.ff is still the false install set', async () => {
    const { env, clones, cli } = await remoteAndClones(['x']);
    const x = clones.x!;
    const hook = join(x, '.git/hooks/pre-merge-commit');
    const ff = () => git(x, ['config', '--local', '--default', '(unset)', 'merge.ff'], env);
    const install = () => cli(x, ['hook', 'install', '--pre-merge-commit']);
    const uninstall = () => cli(x, ['hook', 'uninstall', '--pre-merge-commit']);
    // none before: none after
    expect((await install()).exitCode).toBe(0);
    expect(await uninstall()).toMatchObject({
      exitCode: 0,
      stdout: `removed ${hook}\nunset merge.ff, as it was before hook install set it to false\n`,
    });
    expect(await ff()).toBe('(unset)');
    // a value of the user's, installed over twice (the second install finds the false the first set)
    await git(x, ['config', '--local', 'merge.ff', 'only'], env);
    expect((await install()).exitCode).toBe(0);
    expect((await install()).stdout).toBe(`unchanged ${hook}\n${MERGE_FF('it was false')}\n`);
    const back = await cli(x, ['hook', 'uninstall', '--pre-merge-commit', '--json']);
    expect(JSON.parse(back.stdout)).toEqual({
      schema: 'genjob/result@1',
      ok: true,
      hook: 'pre-merge-commit',
      file: hook,
      action: 'removed',
      merge_ff: { action: 'restored', now: 'only' },
    });
    expect(await ff()).toBe('only');
    // changed since install set it: the user's new value stays
    expect((await install()).exitCode).toBe(0);
    await git(x, ['config', '--local', 'merge.ff', 'true'], env);
    expect(await uninstall()).toMatchObject({
      exitCode: 0,
      stdout: `removed ${hook}\nleft merge.ff=true as it is: it was changed since hook install set it to false\n`,
    });
    expect(await ff()).toBe('true');
    // the user's own false, there before install: install replaced nothing, uninstall keeps it
    await git(x, ['config', '--local', 'merge.ff', 'false'], env);
    expect((await install()).stdout).toBe(`installed ${hook}\n${MERGE_FF('it was false')}\n`);
    expect(await uninstall()).toMatchObject({
      exitCode: 0,
      stdout: `removed ${hook}\nleft merge.ff=false as it is: hook install recorded no value it replaced (it was false already, or set by a genjob that kept no record); git config --unset merge.ff undoes it\n`,
    });
    expect(await ff()).toBe('false');
    // no record is left behind in the repository's config
    expect(await git(x, ['config', '--local', '--get-regexp', '^genjob\\.'], env).catch(() => '')).toBe('');
  });
});
