// Where the merge gate's policy comes from: the base of the range (A of A..B, the merge base of A...B) or
// the commit --trust-ref names, read as git objects; --trust-file's file; never the checkout. A range with
// no single base and no flag is bad usage, and a policy file that is not a regular file is refused.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors.js';
import {
  baseTrustPolicy,
  gatePolicySource,
  gateTrustPolicy,
  type PolicySource,
  rangeArgs,
  rangeBase,
  readPolicyFile,
} from '../../src/git/gate-policy.js';
import { publicKeyString } from '../../src/trust/keys.js';
import { thrown } from '../helpers/thrown.js';
import { type Repo, tempGitRepo } from './git-repo.js';

/** The error a promise rejects with (the test fails when it resolves). */
const rejected = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err,
  );
const key = () => publicKeyString(generateKeyPairSync('ed25519').publicKey);
const trustFile = (name: string, k = key()) =>
  `${JSON.stringify({ schema: 'genjob/trust@1', keys: [{ name, key: k, added: '2026-01-01' }] })}\n`;

describe('rangeArgs', () => {
  it('splits the range into revisions and keeps --not, --remotes, --branches, --tags', () => {
    expect(rangeArgs('  main..feature \t HEAD~2 ')).toEqual(['main..feature', 'HEAD~2']);
    expect(rangeArgs('HEAD --not --remotes=origin --branches --tags=v*')).toEqual([
      'HEAD',
      '--not',
      '--remotes=origin',
      '--branches',
      '--tags=v*',
    ]);
  });

  it('refuses an empty range', () => {
    expect(() => rangeArgs(' \t')).toThrow(new UsageError('EGJ_USAGE', '--commits: the range is empty'));
  });

  it.each(['--all', '--output=/tmp/x', '-p', '--notx', '--remotes=a=b', '---not'])(
    'refuses the option %s',
    (opt) => {
      const err = thrown(() => rangeArgs(`HEAD ${opt}`));
      expect(err).toBeInstanceOf(UsageError);
      expect(err).toMatchObject({
        code: 'EGJ_USAGE',
        message: `--commits: ${JSON.stringify(opt)}: a range holds revisions (and --not, --remotes=, --branches=), no other options`,
      });
    },
  );
});

describe('rangeBase', () => {
  it.each([
    { range: 'origin/main..HEAD', base: ['origin/main'] },
    { range: ' a..b ', base: ['a'] },
    { range: '..b', base: ['HEAD'] },
    { range: 'a..', base: ['a'] },
    { range: 'a...b', base: ['a', 'b'] },
    { range: '...b', base: ['HEAD', 'b'] },
    { range: 'a...', base: ['a', 'HEAD'] },
    { range: 'HEAD', base: null },
    { range: 'a..b c', base: null },
    { range: 'HEAD --not --remotes=origin', base: null },
  ])('$range → $base', ({ range, base }) => {
    expect(rangeBase(range)).toEqual(base);
  });
});

let repo: Repo;
let a: string;
let b: string;
let baseTrust: string;
beforeEach(() => {
  repo = tempGitRepo('gj-policy-');
  baseTrust = trustFile('ci-host');
  a = repo.commit('base', { 'genjob-trust.json': baseTrust });
  repo.git(['checkout', '-q', '-b', 'branch']);
  b = repo.commit('re-pin', { 'genjob-trust.json': trustFile('attacker') });
});

describe('gatePolicySource', () => {
  it('the base of A..B', async () => {
    expect(await gatePolicySource(repo.root, 'main..branch', {})).toEqual({
      commit: a,
      label: `the range's base ${a.slice(0, 12)}`,
      trustFile: null,
    });
  });

  it('the merge base of A...B', async () => {
    repo.git(['checkout', '-q', 'main']);
    const m = repo.commit('main moves on', { README: 'x\n' });
    expect(await gatePolicySource(repo.root, `${m}...branch`, {})).toEqual({
      commit: a,
      label: `the range's merge base ${a.slice(0, 12)}`,
      trustFile: null,
      tip: m,
    });
  });

  it('--trust-ref wins over the base, and --trust-file comes along', async () => {
    expect(
      await gatePolicySource(repo.root, 'main..branch', { trustRef: 'branch', trustFile: '/t.json' }),
    ).toEqual({
      commit: b,
      label: `--trust-ref branch (${b.slice(0, 12)})`,
      trustFile: '/t.json',
    });
  });

  it('--trust-file alone for a range without a base', async () => {
    expect(await gatePolicySource(repo.root, 'branch --not main', { trustFile: '/t.json' })).toEqual({
      commit: null,
      label: '--trust-file',
      trustFile: '/t.json',
    });
  });

  it('refuses a range without a single base, and no flag', async () => {
    expect(await rejected(gatePolicySource(repo.root, 'branch --not main', {}))).toMatchObject({
      code: 'EGJ_USAGE',
      message:
        '--commits "branch --not main": the range has no single base to take the trust policy from; write it as BASE..TIP (or BASE...TIP), or give --trust-ref REF or --trust-file PATH',
    });
  });

  it('refuses a base or a --trust-ref that names no commit', async () => {
    expect(await rejected(gatePolicySource(repo.root, 'nope..branch', {}))).toMatchObject({
      code: 'EGJ_USAGE',
      message: '--commits: "nope" names no commit',
    });
    expect(
      await rejected(gatePolicySource(repo.root, 'a..b', { trustRef: '--output=/tmp/x' })),
    ).toMatchObject({
      code: 'EGJ_USAGE',
      message: '--trust-ref: "--output=/tmp/x" names no commit',
    });
    expect(await rejected(gatePolicySource(repo.root, 'main...nope', {}))).toMatchObject({
      message: '--commits: "nope" names no commit',
    });
  });

  it('refuses A...B of unrelated histories (no merge base)', async () => {
    repo.git(['checkout', '-q', '--orphan', 'other']);
    repo.git(['rm', '-rq', '--cached', '.']);
    const o = repo.commit('unrelated', { x: 'x\n' });
    expect(await rejected(gatePolicySource(repo.root, `main...${o}`, {}))).toMatchObject({
      code: 'EGJ_USAGE',
      message: `--commits "main...${o}": main and ${o} have no merge base to take the trust policy from; give --trust-ref REF or --trust-file PATH`,
    });
  });
});

const at = (commit: string): PolicySource => ({ commit, label: 'x', trustFile: null });

describe('readPolicyFile', () => {
  it('the bytes of the file as the commit holds them, not as the checkout does', async () => {
    writeFileSync(join(repo.root, 'genjob-trust.json'), 'the checkout\n');
    expect(await readPolicyFile(repo.root, at(a), 'genjob-trust.json', 'EGJ_TRUST_FILE')).toEqual({
      bytes: Buffer.from(baseTrust),
      where: `${a.slice(0, 12)}:genjob-trust.json`,
    });
  });

  it('undefined when the commit has no such file', async () => {
    expect(await readPolicyFile(repo.root, at(a), 'genjob.config.json', 'EGJ_CONFIG')).toBeUndefined();
  });

  it('the file beside a genjob root in a subdirectory of the repository', async () => {
    const c = repo.commit('sub', { 'sub/genjob-trust.json': 'sub\n' });
    mkdirSync(join(repo.root, 'sub'), { recursive: true });
    expect(
      await readPolicyFile(join(repo.root, 'sub'), at(c), 'genjob-trust.json', 'EGJ_TRUST_FILE'),
    ).toEqual({
      bytes: Buffer.from('sub\n'),
      where: `${c.slice(0, 12)}:sub/genjob-trust.json`,
    });
  });

  it('refuses a symlink where the file should be', async () => {
    unlinkSync(join(repo.root, 'genjob-trust.json'));
    symlinkSync('/etc/passwd', join(repo.root, 'genjob-trust.json'));
    repo.git(['add', 'genjob-trust.json']);
    const head = repo.commit('link', {});
    expect(
      await rejected(readPolicyFile(repo.root, at(head), 'genjob-trust.json', 'EGJ_TRUST_FILE')),
    ).toMatchObject({
      code: 'EGJ_TRUST_FILE',
      message: `${head.slice(0, 12)}:genjob-trust.json: the policy file is not a regular file (mode 120000)`,
    });
  });

  it('refuses to read a policy file when only --trust-file was given', async () => {
    expect(
      await rejected(
        readPolicyFile(
          repo.root,
          { commit: null, label: '--trust-file', trustFile: '/t' },
          'x.json',
          'EGJ_X',
        ),
      ),
    ).toMatchObject({
      code: 'EGJ_USAGE',
      message: 'x.json: the gate reads it from a commit; give --trust-ref REF',
    });
  });
});

describe('gateTrustPolicy and baseTrustPolicy', () => {
  it('pins the base’s keys, never the branch’s re-pinning', async () => {
    const { policy, where, source } = await baseTrustPolicy(repo.root, 'main..branch', {});
    expect(source.commit).toBe(a);
    expect(policy.trusted.map((t) => t.name)).toEqual(['ci-host']);
    expect(policy.requireSignature).toBe(false);
    expect(where).toBe(`${a.slice(0, 12)}:genjob-trust.json`);
  });

  it('passes --require-signature on', async () => {
    const { policy } = await baseTrustPolicy(repo.root, 'main..branch', { requireSignature: true });
    expect(policy.requireSignature).toBe(true);
  });

  it('forged: A...B trusts a key only while A pins it too: a branch forked before a rotation does not get the old key back', async () => {
    // main rotates: ci-host (pinned at the fork point) out, ci-host-2 in
    repo.git(['checkout', '-q', 'main']);
    const rotated = repo.commit('rotate', { 'genjob-trust.json': trustFile('ci-host-2') });
    const { policy, checkKeys, where, source } = await baseTrustPolicy(repo.root, `${rotated}...branch`, {});
    expect(source).toMatchObject({ commit: a, tip: rotated });
    // no key both pin: nothing passes, unsigned included
    expect(policy).toEqual({ trusted: [], requireSignature: true });
    expect(checkKeys).toEqual([]);
    expect(where).toBe(
      `${a.slice(0, 12)}:genjob-trust.json and ${rotated.slice(0, 12)}:genjob-trust.json (keys both pin)`,
    );
  });

  it('A...B: a key both pin is trusted under A’s name; a side that pins none leaves the other’s keys', async () => {
    repo.git(['checkout', '-q', 'main']);
    const held = repo.git(['show', `${a}:genjob-trust.json`]);
    const same = JSON.parse(held).keys[0].key as string;
    const renamed = repo.commit('rename', { 'genjob-trust.json': trustFile('ci-host-renamed', same) });
    const kept = await baseTrustPolicy(repo.root, `${renamed}...branch`, {});
    expect(kept.policy.trusted.map((t) => t.name)).toEqual(['ci-host-renamed']);
    expect(kept.policy.requireSignature).toBe(true);
    const none = repo.commit('no keys', { 'genjob-trust.json': null });
    const open = await baseTrustPolicy(repo.root, `${none}...branch`, {});
    expect(open.policy.trusted.map((t) => t.name)).toEqual(['ci-host']);
    expect(open.policy.requireSignature).toBe(false);
  });

  it('no pinned key when the base has no trust file', async () => {
    const none = repo.commit('drop it', { 'genjob-trust.json': null });
    const { policy, where } = await gateTrustPolicy(repo.root, { ...at(none), label: 'the base' });
    expect(policy.trusted).toEqual([]);
    expect(where).toBe('the base (no genjob-trust.json)');
  });

  it('a malformed trust file at the base is EGJ_TRUST_FILE naming commit and path', async () => {
    const bad = repo.commit('bad', { 'genjob-trust.json': '{' });
    expect(await rejected(gateTrustPolicy(repo.root, at(bad)))).toMatchObject({
      code: 'EGJ_TRUST_FILE',
      message: expect.stringMatching(
        new RegExp(`^${bad.slice(0, 12)}:genjob-trust.json: not a valid trust file: not JSON`),
      ),
    });
  });

  it('--trust-file: that file’s keys; a missing one is bad usage', async () => {
    const file = join(repo.root, '..', 'reviewed-trust.json');
    writeFileSync(file, trustFile('release-host'));
    const { policy, where } = await gateTrustPolicy(repo.root, { commit: a, label: 'x', trustFile: file });
    expect(policy.trusted.map((t) => t.name)).toEqual(['release-host']);
    expect(where).toBe(file);
    expect(
      await rejected(gateTrustPolicy(repo.root, { commit: a, label: 'x', trustFile: `${file}.gone` })),
    ).toMatchObject({
      code: 'EGJ_USAGE',
      message: `--trust-file ${file}.gone: no such file`,
    });
  });

  it('--trust-file that cannot be read is EGJ_IO', async () => {
    const dir = join(repo.root, '..', 'a-dir');
    mkdirSync(dir);
    expect(
      await rejected(gateTrustPolicy(repo.root, { commit: a, label: 'x', trustFile: dir })),
    ).toMatchObject({
      code: 'EGJ_IO',
      op: 'read',
      file: dir,
      message: expect.stringMatching(new RegExp(`^${dir}: read failed: `)),
    });
  });
});
