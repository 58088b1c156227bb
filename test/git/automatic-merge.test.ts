// The automatic merge the gate compares a merge commit with: git's own merge of the parents (conflicted
// paths keep their markers), an octopus folded parent by parent; and the pathspec-limited comparison.
// Written to a throwaway store, never into the repository, with no merge driver from the branch's
// .gitattributes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { automaticMergeTree, changesPaths } from '../../src/git/automatic-merge.js';
import { git } from '../../src/git/run-git.js';
import { ScratchObjects } from '../../src/git/scratch-objects.js';
import { tempGitRepo } from './git-repo.js';

let scratch: ScratchObjects[] = [];
afterEach(() => {
  for (const s of scratch) s.dispose();
  scratch = [];
});

function scratchOf(root: string): ScratchObjects {
  const s = new ScratchObjects(root);
  scratch.push(s);
  return s;
}

/** `git cat-file ARGS` in the repository, seeing what the scratch store holds too. */
async function catScratch(root: string, s: ScratchObjects, args: readonly string[]): Promise<string> {
  const r = await git(root, ['cat-file', ...args], { env: await s.reading() });
  return r.stdout.toString('utf8').replace(/\n$/, '');
}

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
    expect(await automaticMergeTree([one, two], scratchOf(repo.root))).toBe(
      repo.git(['rev-parse', 'HEAD^{tree}']),
    );
  });

  it('keeps the conflict markers of a conflicted path, so a resolution differs from it', async () => {
    const { repo, side } = branches();
    const one = side('one', { 'a.txt': 'one\n' });
    const two = side('two', { 'a.txt': 'two\n' });
    const s = scratchOf(repo.root);
    const tree = await automaticMergeTree([one, two], s);
    expect(await catScratch(repo.root, s, ['blob', `${tree}:a.txt`])).toMatch(
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
    expect(await automaticMergeTree([one, two, three], scratchOf(repo.root))).toBe(
      repo.git(['rev-parse', 'HEAD^{tree}']),
    );
  });

  it('records an octopus step as one throwaway commit of fixed identity and date, and none for two parents, in the scratch store only', async () => {
    const { repo, side } = branches();
    const one = side('one', { 'a.txt': 'one\n' });
    const two = side('two', { 'b.txt': 'two\n' });
    const three = side('three', { 'c.txt': 'three\n' });
    const s = scratchOf(repo.root);
    const step = await automaticMergeTree([one, two], s);
    // the same bytes whoever runs the gate and whenever
    const throwaway = repo.git(
      ['hash-object', '-t', 'commit', '--stdin'],
      `tree ${step}\nparent ${one}\nparent ${two}\nauthor genjob <genjob@localhost> 0 +0000\ncommitter genjob <genjob@localhost> 0 +0000\n\ngenjob: automatic merge\n`,
    );
    await expect(catScratch(repo.root, s, ['-e', throwaway])).rejects.toThrow();
    await automaticMergeTree([one, two, three], s);
    expect(await catScratch(repo.root, s, ['-t', throwaway])).toBe('commit');
    // the repository itself gained neither the commit nor the merged tree
    expect(() => repo.git(['cat-file', '-e', throwaway])).toThrow();
    expect(() => repo.git(['cat-file', '-e', step])).toThrow();
  });

  it('hostile: a .gitattributes in the checkout (the branch under review) picks no merge driver: a union merge of a conflict is no automatic merge', async () => {
    const { repo, side } = branches();
    const one = side('one', { 'a.txt': 'one\n' });
    const two = side('two', { 'a.txt': 'two\n' });
    // the branch under review is what CI checks out: its attributes are in the work tree and the index
    writeFileSync(join(repo.root, '.gitattributes'), '* merge=union\n');
    repo.git(['add', '.gitattributes']);
    const s = scratchOf(repo.root);
    const tree = await automaticMergeTree([one, two], s);
    expect(await catScratch(repo.root, s, ['blob', `${tree}:a.txt`])).toMatch(/^<<<<<<< /);
  });

  it('merges unrelated histories too', async () => {
    const { repo } = branches();
    const main = repo.git(['rev-parse', 'HEAD']);
    repo.git(['checkout', '-q', '--orphan', 'other']);
    repo.git(['rm', '-rq', '--cached', '.']);
    const other = repo.commit('other', { 'z.txt': 'z\n' });
    const s = scratchOf(repo.root);
    const tree = await automaticMergeTree([main, other], s);
    const r = await git(repo.root, ['ls-tree', '--name-only', tree], { env: await s.reading() });
    expect(r.stdout.toString('utf8').trim().split('\n')).toEqual(['a.txt', 'b.txt', 'z.txt']);
  });
});

describe('changesPaths', () => {
  it('is true only for a difference in a path the pathspecs match (every path when none are given)', async () => {
    const { repo, base } = branches();
    const c = repo.commit('edit a', { 'a.txt': 'edited\n' });
    const s = scratchOf(repo.root);
    expect(await changesPaths(repo.root, base, c, [], s)).toBe(true);
    expect(await changesPaths(repo.root, base, c, ['a.txt'], s)).toBe(true);
    expect(await changesPaths(repo.root, base, c, ['b.txt'], s)).toBe(false);
    expect(await changesPaths(repo.root, repo.git(['rev-parse', `${c}^{tree}`]), c, [], s)).toBe(false);
  });
});
