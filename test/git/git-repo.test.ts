// The git test repository writes objects without git (git-repo.ts): they must be the objects git writes.
import { describe, expect, it } from 'vitest';
import { tempGitRepo } from './git-repo.js';

describe('tempGitRepo().object', () => {
  it.each(['sha1', 'sha256'] as const)(
    'writes what hash-object --literally -w does, in a %s repository',
    (format) => {
      const repo = tempGitRepo('gj-objects-', { objectFormat: format });
      const blob = repo.object('blob', 'text\n');
      expect(blob).toBe(repo.git(['hash-object', '-t', 'blob', '--stdin'], 'text\n'));
      expect(repo.git(['cat-file', '-p', blob])).toBe('text');
      // a hostile tree git would refuse to write without --literally: same id, read back by git as is
      const bytes = Buffer.concat([Buffer.from('100644 a/b\0'), Buffer.from(blob, 'hex')]);
      const tree = repo.object('tree', bytes);
      expect(tree).toBe(repo.git(['hash-object', '-t', 'tree', '--literally', '--stdin'], bytes));
      expect(repo.git(['cat-file', '-t', tree])).toBe('tree');
      // written again: the same id, the file kept
      expect(repo.object('blob', 'text\n')).toBe(blob);
    },
  );
});
