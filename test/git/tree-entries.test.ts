// What a commit holds at some paths, from its tree objects: mode, id and (for regular files) the bytes;
// null for a name that is not there or sits under something that is not a directory.
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isRegularMode, outputMode, treeEntries } from '../../src/git/tree-entries.js';
import { tempGitRepo } from './git-repo.js';

describe('treeEntries', () => {
  it('reads regular files (with bytes when asked), executables, symlinks and directories', async () => {
    const repo = tempGitRepo('gj-entries-');
    repo.commit('files', { 'top.txt': 'top\n', 'd/e/deep.txt': 'deep\n', 'd/run.sh': '#!/bin/sh\n' });
    repo.git(['update-index', '--chmod=+x', 'd/run.sh']);
    symlinkSync('top.txt', join(repo.root, 'link'));
    repo.git(['add', 'link']);
    const c = repo.commit('more', {});
    const paths = ['top.txt', 'd/e/deep.txt', 'd/run.sh', 'link', 'd', 'gone', 'top.txt/under', 'x/y/z'];
    const entries = await treeEntries(repo.root, c, paths, { contents: true });
    expect(
      Object.fromEntries(
        [...entries].map(([p, e]) => [p, e && { mode: e.mode, bytes: e.bytes?.toString() }]),
      ),
    ).toEqual({
      'top.txt': { mode: '100644', bytes: 'top\n' },
      'd/e/deep.txt': { mode: '100644', bytes: 'deep\n' },
      'd/run.sh': { mode: '100755', bytes: '#!/bin/sh\n' },
      link: { mode: '120000', bytes: undefined },
      d: { mode: '40000', bytes: undefined },
      gone: null,
      'top.txt/under': null,
      'x/y/z': null,
    });
    expect(entries.get('top.txt')!.oid).toBe(repo.git(['rev-parse', `${c}:top.txt`]));
    const bare = await treeEntries(repo.root, c, ['top.txt'], { contents: false });
    expect(bare.get('top.txt')).toEqual({ mode: '100644', oid: entries.get('top.txt')!.oid });
  });

  it("gives a name held twice in a hostile tree the bytes of the entry it reports, whichever git's own lookup picks", async () => {
    const repo = tempGitRepo('gj-entries-dup-');
    const first = repo.object('blob', 'first\n');
    const second = repo.object('blob', 'second\n');
    const entry = (oid: string) => Buffer.concat([Buffer.from('100644 x.txt\0'), Buffer.from(oid, 'hex')]);
    const tree = repo.object('tree', Buffer.concat([entry(first), entry(second)]));
    const who = 'T <t@example.com> 0 +0000';
    const c = repo.object('commit', `tree ${tree}\nauthor ${who}\ncommitter ${who}\n\nhostile\n`);
    // git's path lookup and this module's parse of the tree disagree on which entry the name is
    expect(repo.git(['rev-parse', `${c}:x.txt`])).toBe(first);
    const e = (await treeEntries(repo.root, c, ['x.txt'], { contents: true })).get('x.txt')!;
    expect(e.oid).toBe(second);
    expect(e.bytes?.toString()).toBe('second\n');
  });

  it('works in a sha256 repository (32-byte ids in trees)', async () => {
    const repo = tempGitRepo('gj-entries-256-', { objectFormat: 'sha256' });
    const c = repo.commit('one', { 'a/b.txt': 'b\n' });
    const e = (await treeEntries(repo.root, c, ['a/b.txt'], { contents: true })).get('a/b.txt')!;
    expect(e.oid).toHaveLength(64);
    expect(e.bytes?.toString()).toBe('b\n');
  });
});

describe('isRegularMode', () => {
  it.each([
    ['100644', true],
    ['100755', true],
    ['120000', false],
    ['40000', false],
    ['160000', false],
  ])('%s → %s', (mode, regular) => {
    expect(isRegularMode(mode)).toBe(regular);
  });
});

describe('outputMode', () => {
  it.each([
    { executable: true, before: undefined, mode: '100755' },
    { executable: true, before: '100644', mode: '100755' },
    { executable: undefined, before: '100755', mode: '100755' },
    { executable: undefined, before: '100644', mode: '100644' },
    { executable: undefined, before: undefined, mode: '100644' },
    { executable: false, before: '120000', mode: '100644' },
  ])('executable $executable, before $before → $mode', ({ executable, before, mode }) => {
    expect(outputMode(executable, before)).toBe(mode);
  });
});
