// The gate's revisions pinned to commit ids: a short name that more than one ref (or a ref and an
// abbreviated object id) could mean is refused, naming them, as is REMOTE/BRANCH standing for another
// ref than the remote's branch; HEAD, full ref names and full object ids mean one thing; ~N/^N suffixes
// apply to the pinned commit. A real repository with a remote-tracking ref, as a clone has.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors.js';
import { gatePolicySource, rangeArgs } from '../../src/git/gate-policy.js';
import { pinRangeArgs, pinRevision, splitRevision } from '../../src/git/gate-revision.js';
import { thrown } from '../helpers/thrown.js';
import { type Repo, tempGitRepo } from './git-repo.js';

const rejected = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err,
  );

let repo: Repo;
let base: string;
let mid: string;
let tip: string;
beforeEach(() => {
  repo = tempGitRepo('gj-revision-');
  base = repo.commit('base', { 'a.txt': 'a\n' });
  repo.git(['remote', 'add', 'origin', join(repo.root, '..', 'nowhere.git')]);
  repo.git(['update-ref', 'refs/remotes/origin/main', base]);
  repo.git(['symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/remotes/origin/main']);
  repo.git(['checkout', '-q', '-b', 'branch']);
  mid = repo.commit('mid', { 'b.txt': 'b\n' });
  tip = repo.commit('tip', { 'c.txt': 'c\n' });
});

describe('splitRevision', () => {
  it.each([
    ['origin/main', 'origin/main', ''],
    ['origin/main~2', 'origin/main', '~2'],
    ['HEAD^2~1', 'HEAD', '^2~1'],
    ['v1^{commit}', 'v1', '^{commit}'],
    ['x^!', 'x', '^!'],
    ['user@host', 'user@host', ''],
  ])('%s → %s + %s', (rev, name, suffix) => {
    expect(splitRevision(rev, '--commits')).toEqual({ name, suffix });
  });

  it.each(['main@{upstream}', '@{u}', 'HEAD@{1}', ':/fix', 'HEAD:genjob-trust.json'])('refuses %s', (rev) => {
    const err = thrown(() => splitRevision(rev, '--trust-ref'));
    expect(err).toBeInstanceOf(UsageError);
    expect(err).toMatchObject({
      code: 'EGJ_USAGE',
      message: `--trust-ref: ${JSON.stringify(rev)}: give a ref name, HEAD or a commit id, optionally followed by ~N or ^N (not @{…} or :… forms)`,
    });
  });
});

describe('pinRevision', () => {
  it('pins short names, full names, HEAD, @, full and short ids, keeping the suffix', async () => {
    expect(await pinRevision(repo.root, 'origin/main', 'x')).toBe(base);
    expect(await pinRevision(repo.root, 'origin', 'x')).toBe(base);
    expect(await pinRevision(repo.root, 'refs/remotes/origin/main', 'x')).toBe(base);
    expect(await pinRevision(repo.root, 'branch~1', 'x')).toBe(`${tip}~1`);
    expect(await pinRevision(repo.root, 'HEAD^', 'x')).toBe(`${tip}^`);
    expect(await pinRevision(repo.root, '@~2', 'x')).toBe(`${tip}~2`);
    expect(await pinRevision(repo.root, mid, 'x')).toBe(mid);
    expect(await pinRevision(repo.root, mid.slice(0, 10), 'x')).toBe(mid);
    repo.git(['tag', 'v1', mid]);
    expect(await pinRevision(repo.root, 'v1', 'x')).toBe(mid);
  });

  it('hostile: a tag named origin/main beside refs/remotes/origin/main is refused, naming both', async () => {
    repo.git(['tag', 'origin/main', tip]);
    const message =
      '--commits: "origin/main" is ambiguous here: it could mean refs/tags/origin/main or refs/remotes/origin/main; write the one you mean in full (refs/…), or give a full commit id';
    expect(await rejected(pinRevision(repo.root, 'origin/main~1', '--commits'))).toMatchObject({
      code: 'EGJ_USAGE',
      message,
    });
    // the full name still means the remote's branch
    expect(await pinRevision(repo.root, 'refs/remotes/origin/main', 'x')).toBe(base);
    // the range's base, its walk, and --trust-ref all refuse it
    expect(await rejected(gatePolicySource(repo.root, 'origin/main..HEAD', {}))).toMatchObject({ message });
    expect(await rejected(pinRangeArgs(repo.root, rangeArgs('origin/main..HEAD')))).toMatchObject({
      message,
    });
    expect(
      await rejected(gatePolicySource(repo.root, 'HEAD --not x', { trustRef: 'origin/main' })),
    ).toMatchObject({ message: message.replace('--commits', '--trust-ref') });
    expect(await gatePolicySource(repo.root, 'refs/remotes/origin/main..HEAD', {})).toMatchObject({
      commit: base,
    });
  });

  it('hostile: a branch named origin/main, or a tag named origin, is refused the same way', async () => {
    repo.git(['branch', 'origin/main', tip]);
    repo.git(['tag', 'origin', tip]);
    expect(await rejected(pinRevision(repo.root, 'origin/main', '--commits'))).toMatchObject({
      message: expect.stringContaining('could mean refs/heads/origin/main or refs/remotes/origin/main;'),
    });
    expect(await rejected(pinRevision(repo.root, 'origin', '--commits'))).toMatchObject({
      message: expect.stringContaining('could mean refs/tags/origin or refs/remotes/origin/HEAD;'),
    });
  });

  it('hostile: a tag named origin/main where the remote’s branch was not fetched is refused', async () => {
    repo.git(['update-ref', '-d', 'refs/remotes/origin/HEAD']);
    repo.git(['update-ref', '-d', 'refs/remotes/origin/main']);
    repo.git(['tag', 'origin/main', tip]);
    expect(await rejected(pinRevision(repo.root, 'origin/main', '--commits'))).toMatchObject({
      code: 'EGJ_USAGE',
      message:
        '--commits: "origin/main" means refs/tags/origin/main here, not a branch of the remote origin (refs/remotes/origin/main is missing: fetch it); write the one you mean in full (refs/…), or give a full commit id',
    });
    // a full name that is missing names no commit, whatever git would find under refs/tags/refs/…
    repo.git(['tag', 'refs/remotes/origin/main', tip]);
    expect(await rejected(pinRevision(repo.root, 'refs/remotes/origin/main', '--commits'))).toMatchObject({
      message: '--commits: "refs/remotes/origin/main" names no commit',
    });
  });

  it('hostile: a tag named like an abbreviated commit id is refused; a full id is the object, whatever tag bears it', async () => {
    const short = base.slice(0, 9);
    repo.git(['tag', short, tip]);
    expect(await rejected(pinRevision(repo.root, short, '--commits'))).toMatchObject({
      message: `--commits: "${short}" is ambiguous here: it could mean refs/tags/${short} or the object id starting with ${short}; write the one you mean in full (refs/…), or give a full commit id`,
    });
    repo.git(['tag', base, tip]);
    expect(await pinRevision(repo.root, base, '--commits')).toBe(base);
    expect(await gatePolicySource(repo.root, `${base}..HEAD`, {})).toMatchObject({ commit: base });
  });

  it('hostile: in a sha256 repository a 64-hex id is the object, a 40-hex prefix of it beside a tag so named is ambiguous', async () => {
    const r = tempGitRepo('gj-revision-256-', { objectFormat: 'sha256' });
    const c = r.commit('base', { 'a.txt': 'a\n' });
    const d = r.commit('next', { 'a.txt': 'b\n' });
    r.git(['tag', c, d]);
    r.git(['tag', c.slice(0, 40), d]);
    expect(await pinRevision(r.root, c, 'x')).toBe(c);
    expect(await rejected(pinRevision(r.root, c.slice(0, 40), '--commits'))).toMatchObject({
      message: expect.stringContaining(
        `could mean refs/tags/${c.slice(0, 40)} or the object id starting with`,
      ),
    });
  });

  it('HEAD is the checkout’s, whatever refs named HEAD exist', async () => {
    repo.git(['tag', 'HEAD', base]);
    expect(await pinRevision(repo.root, 'HEAD', 'x')).toBe(tip);
  });

  it('hostile: a tag named like a ref file of the git directory (FETCH_HEAD) is refused while that file exists', async () => {
    writeFileSync(join(repo.root, '.git', 'FETCH_HEAD'), `${mid}\t\tbranch 'x' of there\n`);
    expect(await pinRevision(repo.root, 'FETCH_HEAD', 'x')).toBe(mid);
    repo.git(['tag', 'FETCH_HEAD', tip]);
    expect(await rejected(pinRevision(repo.root, 'FETCH_HEAD', '--commits'))).toMatchObject({
      message: expect.stringContaining(
        'could mean FETCH_HEAD (in the git directory) or refs/tags/FETCH_HEAD;',
      ),
    });
    // a branch named like a file of the git directory that is no ref (config, index) is that branch
    repo.git(['branch', 'config', mid]);
    expect(await pinRevision(repo.root, 'config', 'x')).toBe(mid);
  });

  it('names no commit: unknown names, names no ref can hold', async () => {
    for (const rev of ['nope', 'a*b', 'a b', '--output=/tmp/x', ''])
      expect(await rejected(pinRevision(repo.root, rev, '--commits'))).toMatchObject({
        code: 'EGJ_USAGE',
        message: `--commits: ${JSON.stringify(rev)} names no commit`,
      });
  });
});

describe('pinRangeArgs', () => {
  it('pins each side of A..B and A...B, ^A and A, keeps empty sides and options', async () => {
    expect(
      await pinRangeArgs(
        repo.root,
        rangeArgs('origin/main..branch origin/main...HEAD~1 ..HEAD ^origin branch~1 --not --remotes=origin'),
      ),
    ).toEqual([
      `${base}..${tip}`,
      `${base}...${tip}~1`,
      `..${tip}`,
      `^${base}`,
      `${tip}~1`,
      '--not',
      '--remotes=origin',
    ]);
  });
});
