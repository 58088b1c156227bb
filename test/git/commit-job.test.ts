// commitFiles: one commit of exactly the given files on top of HEAD. What its git steps must keep: the
// real index (not the temporary one) is the one whose entries are set after the commit, and only when it
// exists (or the branch was unborn); a commit that changes nothing is not made; the repository's path is
// read whole even when it holds a newline.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commitFiles } from '../../src/git/commit-job.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp-store.js';
import { tempGitRepo } from './git-repo.js';

/** A repository with a.txt committed, an identity of its own, and `b.txt`'s new bytes in a file outside it. */
function fixture(prefix = 'commit-job') {
  const repo = tempGitRepo(prefix);
  repo.git(['config', 'user.name', 'Test']);
  repo.git(['config', 'user.email', 'test@example.com']);
  const head = repo.commit('first', { 'a.txt': 'a\n' });
  const source = join(tempDir('commit-job-src'), 'b.txt');
  writeFileSync(source, 'b\n');
  return { repo, head, source };
}

const commitB = (store: Store, source: string) =>
  commitFiles(store, { files: [{ path: 'b.txt', source }], message: 'add b\n', reflog: 'test commit' });

describe('commitFiles', () => {
  it('commits the file on HEAD and sets its entry in the real index, not only in its temporary one', async () => {
    const { repo, head, source } = fixture();
    const c = await commitB(repo.store, source);
    expect(c.status).toBe('committed');
    expect(repo.git(['rev-parse', 'HEAD^'])).toBe(head);
    expect(repo.git(['ls-tree', '-r', '--name-only', 'HEAD'])).toBe('a.txt\nb.txt');
    expect(repo.blob('HEAD', 'b.txt')?.toString()).toBe('b\n');
    // staged as committed: the index holds b.txt at HEAD's blob (the work tree never had it)
    expect(repo.git(['diff', '--cached', '--name-only'])).toBe('');
    expect(repo.git(['ls-files', '--stage', 'b.txt'])).toMatch(/^100644 [0-9a-f]{40} 0\tb\.txt$/);
    // the temporary index is gone
    expect(readdirSync(repo.store.layout.tmp)).toEqual([]);
  });

  it('leaves a missing index missing on a branch with commits', async () => {
    const { repo, source } = fixture();
    rmSync(join(repo.root, '.git', 'index'));
    expect((await commitB(repo.store, source)).status).toBe('committed');
    expect(existsSync(join(repo.root, '.git', 'index'))).toBe(false);
  });

  it('makes no commit when the files are already as HEAD holds them', async () => {
    const { repo, head } = fixture();
    const same = join(tempDir('commit-job-same'), 'a.txt');
    writeFileSync(same, 'a\n');
    const c = await commitFiles(repo.store, {
      files: [{ path: 'a.txt', source: same }],
      message: 'nothing\n',
      reflog: 'test commit',
    });
    expect(c.status).toBe('unchanged');
    expect(repo.git(['rev-parse', 'HEAD'])).toBe(head);
  });

  it('works in a repository whose path holds a newline', async () => {
    const { source } = fixture();
    const parent = join(tempDir('commit-job-nl'), 'two\nlines');
    mkdirSync(parent);
    const repo = tempGitRepo('repo', { parent });
    repo.git(['config', 'user.name', 'Test']);
    repo.git(['config', 'user.email', 'test@example.com']);
    const head = repo.commit('first', { 'a.txt': 'a\n' });
    expect((await commitB(new Store(repo.root).ensure(), source)).status).toBe('committed');
    expect(repo.git(['rev-parse', 'HEAD^'])).toBe(head);
    expect(repo.git(['diff', '--cached', '--name-only'])).toBe('');
  });
});
