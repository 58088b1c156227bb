// fetchKeyRefs against a remote holding objects git's strict checks refuse, with real git and real
// repositories: a bad ref is skipped by itself (git's words its rule) while every good ref is mirrored,
// the refs end exactly as a clean fetch of the good ones would leave them, nothing of a skipped ref is
// kept, narrowing costs O(b log n) fetches, and --max-bytes and --timeout bound the whole pull, however
// many fetches narrowing takes.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GitTimedOutError, RejectedError } from '../../src/core/errors.js';
import { fetchKeyRefs } from '../../src/git/fetch-material.js';
import { type Repo, tempGitRepo } from './git-repo.js';

/** Far from anything these tests fetch: neither bound decides it unless a test says so. */
const BOUNDS = { timeoutMs: 600_000, maxBytes: 64 * 1024 * 1024 };

const key = (c: string) => c.repeat(64);

/** A commit git's checks accept, of a tree holding `bytes` (distinct bytes, distinct objects). */
function goodCommit(r: Repo, bytes: string | Buffer): string {
  const blob = r.object('blob', bytes);
  const tree = r.git(['mktree'], `100644 blob ${blob}\tjob.json\n`);
  return r.git(['commit-tree', tree, '-m', 'good']);
}

/** A commit whose author has no email and no date: git's fsck refuses it (missingEmail). */
function badCommit(r: Repo, salt: string): string {
  const tree = r.git(['mktree'], '');
  return r.object('commit', `tree ${tree}\nauthor evil ${salt}\ncommitter evil\n\nforged\n`);
}

/**
 * `local` with the remote `origin`, whose upload-pack notes each of its runs (ls-remote and each fetch) with
 * the bytes of the packs narrowing's quarantine held then; returns those byte counts, one a run.
 */
function withCountedOrigin(local: Repo, remote: Repo, sleepSeconds = 0) {
  const runs = join(local.root, '..', 'upload-pack-runs');
  const wrapper = join(local.root, '..', 'upload-pack');
  const packs = `${local.root}/.git/genjob-pull-*/objects/pack/*.pack`;
  writeFileSync(
    wrapper,
    `#!/bin/sh\nfor f in ${packs}; do [ -e "$f" ] && wc -c < "$f"; done | awk '{ s += $1 } END { print s + 0 }' >> '${runs}'\n${sleepSeconds > 0 ? `sleep ${sleepSeconds}\n` : ''}exec git-upload-pack "$@"\n`,
    { mode: 0o755 },
  );
  local.git(['remote', 'add', 'origin', remote.root]);
  local.git(['config', 'remote.origin.uploadpack', wrapper]);
  return () => (existsSync(runs) ? readFileSync(runs, 'utf8').split('\n').filter(Boolean).map(Number) : []);
}

/** The refs under refs/genjob-pulled/ (name and object), or under refs/genjob/ renamed as pull mirrors them. */
function pulledRefs(r: Repo): string {
  return r.git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/genjob-pulled/']);
}
function mirrorOf(r: Repo, except: readonly string[]): string {
  return r
    .git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/genjob/'])
    .split('\n')
    .filter((l) => !except.some((ref) => l.endsWith(` ${ref}`)))
    .map((l) => l.replace(' refs/genjob/', ' refs/genjob-pulled/'))
    .join('\n');
}

/** What a fetch left behind in `r`: index-pack's temporary files, and narrowing's quarantines. */
function leftovers(r: Repo): string[] {
  const pack = join(r.root, '.git/objects/pack');
  return [
    ...(existsSync(pack) ? readdirSync(pack).filter((n) => n.startsWith('tmp_')) : []),
    ...readdirSync(join(r.root, '.git')).filter((n) => n.startsWith('genjob-pull-')),
  ];
}

const has = (r: Repo, oid: string) => {
  try {
    r.git(['cat-file', '-e', oid]);
    return true;
  } catch {
    return false;
  }
};

describe('fetchKeyRefs narrows a fetch refused by git’s checks down to the bad refs', () => {
  it('hostile: one malformed ref is skipped by itself with git’s words; every good ref is mirrored and the refs end as a clean fetch of the good ones leaves them', async () => {
    const remote = tempGitRepo('gj-fetch-remote-');
    const local = tempGitRepo('gj-fetch-local-');
    for (const c of '0123456789ab')
      remote.git(['update-ref', `refs/genjob/keys/${key(c)}`, goodCommit(remote, c)]);
    remote.git(['update-ref', `refs/genjob/checks/${key('0')}/${key('f')}`, goodCommit(remote, 'check')]);
    // pulled once while all was good, then the remote moves one key to a malformed commit, deletes another
    // and adds one
    expect((await fetchKeyRefs(local.root, remote.root, BOUNDS)).skipped).toEqual([]);
    const evil = badCommit(remote, '1');
    remote.git(['update-ref', `refs/genjob/keys/${key('7')}`, evil]);
    remote.git(['update-ref', '-d', `refs/genjob/keys/${key('2')}`]);
    remote.git(['update-ref', `refs/genjob/keys/${key('c')}`, goodCommit(remote, 'c')]);
    const count = withCountedOrigin(local, remote);
    const { refs, skipped } = await fetchKeyRefs(local.root, 'origin', BOUNDS);
    expect(skipped).toEqual([
      {
        ref: `refs/genjob/keys/${key('7')}`,
        rule: expect.stringMatching(
          new RegExp(`^git's object checks refused what it points to: error: object ${evil}: missingEmail: `),
        ),
      },
    ]);
    // the good ones as the remote has them, the deleted one pruned, the bad one's earlier material gone too
    expect(pulledRefs(local)).toBe(mirrorOf(remote, [`refs/genjob/keys/${key('7')}`]));
    expect(refs.map((r) => r.key)).toEqual([...'01345689abc'].map(key));
    expect(has(local, evil)).toBe(false);
    expect(leftovers(local)).toEqual([]);
    // the fetch of all, the listing, then two fetches for each halving of 13 refs (4), at most
    expect(count().length).toBeLessThanOrEqual(2 + 2 * Math.ceil(Math.log2(13)));
  });

  it('hostile: a fetch refspec of the user’s config mapping refs/genjob/ does not let the remote move this clone’s own material refs', async () => {
    const remote = tempGitRepo('gj-fetch-remote-');
    const local = tempGitRepo('gj-fetch-local-');
    remote.git(['update-ref', `refs/genjob/keys/${key('1')}`, goodCommit(remote, 'theirs')]);
    remote.git(['update-ref', `refs/genjob/keys/${key('2')}`, goodCommit(remote, 'more of theirs')]);
    const mine = goodCommit(local, 'mine');
    local.git(['update-ref', `refs/genjob/keys/${key('1')}`, mine]);
    local.git(['remote', 'add', 'origin', remote.root]);
    // git updates the refs a configured refspec maps beside those a fetch names ("opportunistic")
    local.git(['config', '--add', 'remote.origin.fetch', '+refs/genjob/*:refs/genjob/*']);
    const own = () => local.git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/genjob/']);
    const before = own();
    await fetchKeyRefs(local.root, 'origin', BOUNDS);
    expect(own()).toBe(before);
    // and so when narrowing down a malformed ref
    remote.git(['update-ref', `refs/genjob/keys/${key('3')}`, badCommit(remote, '3')]);
    const { skipped } = await fetchKeyRefs(local.root, 'origin', BOUNDS);
    expect(skipped.map((s) => s.ref)).toEqual([`refs/genjob/keys/${key('3')}`]);
    expect(own()).toBe(before);
    expect(pulledRefs(local)).toBe(mirrorOf(remote, [`refs/genjob/keys/${key('3')}`]));
  });

  it('removes the quarantine a pull killed on its way left behind, and leaves a live pull’s alone', async () => {
    const remote = tempGitRepo('gj-fetch-remote-');
    const local = tempGitRepo('gj-fetch-local-');
    remote.git(['update-ref', `refs/genjob/keys/${key('1')}`, goodCommit(remote, '1')]);
    remote.git(['update-ref', `refs/genjob/keys/${key('2')}`, badCommit(remote, '2')]);
    const gone = spawnSync('true').pid!;
    const dead = join(local.root, `.git/genjob-pull-${gone}-abcdef`);
    const live = join(local.root, `.git/genjob-pull-${process.pid}-ghijkl`);
    for (const d of [dead, live]) mkdirSync(join(d, 'objects'), { recursive: true });
    const { skipped } = await fetchKeyRefs(local.root, remote.root, BOUNDS);
    expect(skipped.map((s) => s.ref)).toEqual([`refs/genjob/keys/${key('2')}`]);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });

  it('hostile: b malformed refs among n cost O(b log n) fetches, not one per ref', async () => {
    const remote = tempGitRepo('gj-fetch-remote-');
    const local = tempGitRepo('gj-fetch-local-');
    const n = 64;
    const names = Array.from({ length: n }, (_, i) => i.toString(16).padStart(64, '0'));
    const bad = new Set([names[5]!, names[30]!, names[61]!]);
    for (const [i, k] of names.entries())
      remote.git([
        'update-ref',
        `refs/genjob/keys/${k}`,
        bad.has(k) ? badCommit(remote, String(i)) : goodCommit(remote, `k${i}`),
      ]);
    const count = withCountedOrigin(local, remote);
    const { refs, skipped } = await fetchKeyRefs(local.root, 'origin', BOUNDS);
    expect(skipped.map((s) => s.ref)).toEqual([...bad].map((k) => `refs/genjob/keys/${k}`));
    expect(refs).toHaveLength(n - bad.size);
    // 2 + 2·b·log2(n) = 38, where one fetch per ref would be 66
    expect(count().length).toBeLessThanOrEqual(2 + 2 * bad.size * Math.log2(n));
  });

  it('hostile: narrowing cannot multiply --max-bytes: what all its fetches keep counts against one bound', async () => {
    const remote = tempGitRepo('gj-fetch-remote-');
    const local = tempGitRepo('gj-fetch-local-');
    // two good keys of 150 KiB each, incompressible, beside two bad ones: each half fits 200 KiB, both do not
    const [g1, g2] = [randomBytes(150 * 1024), randomBytes(150 * 1024)];
    remote.git(['update-ref', `refs/genjob/keys/${key('1')}`, goodCommit(remote, g1)]);
    remote.git(['update-ref', `refs/genjob/keys/${key('2')}`, badCommit(remote, '2')]);
    remote.git(['update-ref', `refs/genjob/keys/${key('3')}`, goodCommit(remote, g2)]);
    remote.git(['update-ref', `refs/genjob/keys/${key('4')}`, badCommit(remote, '4')]);
    const before = pulledRefs(local);
    const held = withCountedOrigin(local, remote);
    const err = await fetchKeyRefs(local.root, 'origin', { ...BOUNDS, maxBytes: 200 * 1024 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RejectedError);
    expect((err as RejectedError).code).toBe('EGJ_PULL_TOO_LARGE');
    // narrowed (the fetch of all, the listing, then fetches of halves), never holding more than the bound
    expect(held().length).toBeGreaterThan(2);
    expect(Math.max(...held())).toBeLessThanOrEqual(200 * 1024);
    expect(pulledRefs(local)).toBe(before);
    expect(leftovers(local)).toEqual([]);
    // under a bound both fit: the good ones come in, the bad ones are skipped
    const ok = await fetchKeyRefs(local.root, 'origin', { ...BOUNDS, maxBytes: 1024 * 1024 });
    expect(ok.skipped.map((s) => s.ref)).toEqual([key('2'), key('4')].map((k) => `refs/genjob/keys/${k}`));
    expect(ok.refs.map((r) => r.key)).toEqual([key('1'), key('3')]);
  });

  it('hostile: narrowing cannot multiply --timeout: every fetch it makes runs within the one time of the pull, and a stop moves no ref', async () => {
    const remote = tempGitRepo('gj-fetch-remote-');
    const local = tempGitRepo('gj-fetch-local-');
    for (const c of '0123456789abcde')
      remote.git(['update-ref', `refs/genjob/keys/${key(c)}`, goodCommit(remote, c)]);
    remote.git(['update-ref', `refs/genjob/keys/${key('f')}`, badCommit(remote, 'f')]);
    const before = pulledRefs(local);
    // each run of the remote's upload-pack takes 1 s: the fetch of all, the listing and 8 narrowing fetches
    // take 10 s, each well within 4 s
    const count = withCountedOrigin(local, remote, 1);
    const err = await fetchKeyRefs(local.root, 'origin', { ...BOUNDS, timeoutMs: 4000 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GitTimedOutError);
    expect((err as GitTimedOutError).message).toMatch(/did not finish within 4 s/);
    expect(count().length).toBeLessThan(10);
    expect(pulledRefs(local)).toBe(before);
    expect(leftovers(local)).toEqual([]);
  });
});
