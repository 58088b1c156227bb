// check's one rev-parse of HEAD (headIds) also names the repository's common git directory, which the
// checkers' masks take from it (repository-dirs.ts) instead of asking git again: both must be what git
// says on its own, for a main checkout and a linked worktree, whatever the path holds (a newline, too).
import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { headIds } from '../../src/check/scratch-tree.js';
import { repositoryDirs } from '../../src/git/repository-dirs.js';
import { tempGitRepo } from '../git/git-repo.js';
import { tempDir } from '../helpers/temp-store.js';

/** What git says on its own, one question per command. */
function asked(root: string) {
  const one = (args: string[]) =>
    execFileSync('git', ['-C', root, 'rev-parse', '--path-format=absolute', ...args])
      .toString('utf8')
      .replace(/\n$/, '');
  return {
    objects: one(['--git-path', 'objects']),
    common: one(['--git-common-dir']),
    head: one(['HEAD^{commit}']),
    tree: one(['HEAD^{tree}']),
  };
}

describe('headIds', () => {
  it('names HEAD, its tree, the object directory and (for the masks) the common directory, from a path with a newline', async () => {
    const parent = join(tempDir('head-ids'), 'line\nbreak $HOME');
    mkdirSync(parent);
    const repo = tempGitRepo('head-ids', { parent });
    repo.commit('first', { 'a.txt': 'a\n' });
    const want = asked(repo.root);
    expect(want.common).toContain('\n');
    expect(await headIds(repo.root)).toEqual({ head: want.head, baseTree: want.tree, objects: want.objects });
    expect(await repositoryDirs(repo.root)).toEqual([repo.root, want.common]);
  });

  it('from a linked worktree: the main checkout’s objects, and its git directory and work tree masked', async () => {
    const repo = tempGitRepo('head-ids-wt');
    repo.commit('first', { 'a.txt': 'a\n' });
    const linked = join(realpathSync(tempDir('head-ids-linked')), 'wt');
    repo.git(['worktree', 'add', '-q', '--detach', linked]);
    const want = asked(linked);
    expect(want.common).toBe(join(repo.root, '.git'));
    expect(await headIds(linked)).toEqual({ head: want.head, baseTree: want.tree, objects: want.objects });
    expect(await repositoryDirs(linked)).toEqual([linked, join(repo.root, '.git'), repo.root]);
  });
});
