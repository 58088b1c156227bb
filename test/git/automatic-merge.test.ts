// The automatic merge the gate compares a merge commit with: git's own merge of the parents (conflicted
// paths keep their markers), an octopus folded parent by parent; and the pathspec-limited comparison.
import { describe, expect, it } from 'vitest';
import { automaticMergeTree, changesPaths } from '../../src/git/automatic-merge.js';
import { tempGitRepo } from './git-repo.js';

function branches() {
  const repo = tempGitRepo('gj-merge-');
  const base = repo.commit('base', { 'a.txt': 'a\n', 'b.txt': 'b\n' });
  const side = (name: string, files: Record<string, string>) => {
    repo.git(['checkout', '-q', '-b', name, base]);
    const c = repo.commit(name, files);
    repo.git(['checkout', '-q', 'main']);
    return c;
  };
  return { repo, base, side };
}

describe('automaticMergeTree', () => {
  it('is the tree `git merge` makes of two parents that merge cleanly', async () => {
    const { repo, side } = branches();
    const one = side('one', { 'a.txt': 'one\n' });
    const two = side('two', { 'b.txt': 'two\n' });
    repo.git(['checkout', '-q', one]);
    repo.git(['merge', '-q', '--no-ff', '-m', 'm', two]);
    expect(await automaticMergeTree(repo.root, [one, two])).toBe(repo.git(['rev-parse', 'HEAD^{tree}']));
  });

  it('keeps the conflict markers of a conflicted path, so a resolution differs from it', async () => {
    const { repo, side } = branches();
    const one = side('one', { 'a.txt': 'one\n' });
    const two = side('two', { 'a.txt': 'two\n' });
    const tree = await automaticMergeTree(repo.root, [one, two]);
    expect(repo.git(['cat-file', 'blob', `${tree}:a.txt`])).toMatch(
      /^<<<<<<< .*\none\n=======\ntwo\n>>>>>>> /,
    );
  });

  it('folds an octopus parent by parent: the tree `git merge` makes of three branches', async () => {
    const { repo, side } = branches();
    const one = side('one', { 'a.txt': 'one\n' });
    const two = side('two', { 'b.txt': 'two\n' });
    const three = side('three', { 'c.txt': 'three\n' });
    repo.git(['checkout', '-q', one]);
    repo.git(['merge', '-q', '--no-ff', '-m', 'm', two, three]);
    expect(await automaticMergeTree(repo.root, [one, two, three])).toBe(
      repo.git(['rev-parse', 'HEAD^{tree}']),
    );
  });

  it('records an octopus step as one throwaway commit of fixed identity and date, and none for two parents', async () => {
    const { repo, side } = branches();
    const one = side('one', { 'a.txt': 'one\n' });
    const two = side('two', { 'b.txt': 'two\n' });
    const three = side('three', { 'c.txt': 'three\n' });
    const step = await automaticMergeTree(repo.root, [one, two]);
    // the same bytes whoever runs the gate and whenever: a repeated gate adds no object
    const throwaway = repo.git(
      ['hash-object', '-t', 'commit', '--stdin'],
      `tree ${step}\nparent ${one}\nparent ${two}\nauthor genjob <genjob@localhost> 0 +0000\ncommitter genjob <genjob@localhost> 0 +0000\n\ngenjob: automatic merge\n`,
    );
    expect(() => repo.git(['cat-file', '-e', throwaway])).toThrow();
    await automaticMergeTree(repo.root, [one, two, three]);
    expect(repo.git(['cat-file', '-t', throwaway])).toBe('commit');
  });

  it('merges unrelated histories too', async () => {
    const { repo } = branches();
    const main = repo.git(['rev-parse', 'HEAD']);
    repo.git(['checkout', '-q', '--orphan', 'other']);
    repo.git(['rm', '-rq', '--cached', '.']);
    const other = repo.commit('other', { 'z.txt': 'z\n' });
    const tree = await automaticMergeTree(repo.root, [main, other]);
    expect(repo.git(['ls-tree', '--name-only', tree]).split('\n')).toEqual(['a.txt', 'b.txt', 'z.txt']);
  });
});

describe('changesPaths', () => {
  it('is true only for a difference in a path the pathspecs match (every path when none are given)', async () => {
    const { repo, base } = branches();
    const c = repo.commit('edit a', { 'a.txt': 'edited\n' });
    expect(await changesPaths(repo.root, base, c, [])).toBe(true);
    expect(await changesPaths(repo.root, base, c, ['a.txt'])).toBe(true);
    expect(await changesPaths(repo.root, base, c, ['b.txt'])).toBe(false);
    expect(await changesPaths(repo.root, repo.git(['rev-parse', `${c}^{tree}`]), c, [])).toBe(false);
  });
});
