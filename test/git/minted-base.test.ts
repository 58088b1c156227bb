// A commit holds a job's inputs as minted only when every input and every file it only read is a regular
// file with its minted digest and every file the job creates is absent; the first that is not is named,
// with what is there.
import { symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/sha256.js';
import { staleInput } from '../../src/git/minted-base.js';
import { tempGitRepo } from './git-repo.js';

const input = (path: string, text: string | null) => ({
  path,
  sha256: text === null ? null : sha256Hex(text),
});

describe('staleInput', () => {
  it('is null when the commit holds every input as minted and none of the files to create', async () => {
    const repo = tempGitRepo('gj-minted-');
    const c = repo.commit('base', { 'a.txt': 'a\n', 'd/b.txt': 'b\n' });
    const job = { inputs: [input('a.txt', 'a\n'), input('d/b.txt', 'b\n'), input('d/new.txt', null)] };
    const { stale, entries } = await staleInput(repo.root, c, job);
    expect(stale).toBeNull();
    expect(entries.get('a.txt')).toMatchObject({ mode: '100644' });
    expect(entries.get('d/new.txt')).toBeNull();
  });

  it.each([
    {
      name: 'an input with other bytes',
      job: [input('a.txt', 'a\n'), input('d/b.txt', 'minted\n')],
      stale: {
        path: 'd/b.txt',
        minted: sha256Hex('minted\n'),
        held: `sha256 ${sha256Hex('b\n').slice(0, 12)}`,
      },
    },
    {
      name: 'an input that is gone',
      job: [input('gone.txt', 'g\n')],
      stale: { path: 'gone.txt', minted: sha256Hex('g\n'), held: 'absent', heldSha256: null },
    },
    {
      name: 'a file to create that is there',
      job: [input('a.txt', null)],
      stale: {
        path: 'a.txt',
        minted: null,
        held: `sha256 ${sha256Hex('a\n').slice(0, 12)}`,
        heldSha256: sha256Hex('a\n'),
      },
    },
    {
      name: 'a file to create where a directory is',
      job: [input('d', null)],
      stale: { path: 'd', minted: null, held: 'an entry of mode 40000', heldSha256: null },
    },
  ])('names $name', async ({ job, stale }) => {
    const repo = tempGitRepo('gj-minted-');
    const c = repo.commit('base', { 'a.txt': 'a\n', 'd/b.txt': 'b\n' });
    expect((await staleInput(repo.root, c, { inputs: job })).stale).toMatchObject(stale);
  });

  it('names a file the job only read (--read) that the commit holds with other bytes', async () => {
    const repo = tempGitRepo('gj-minted-');
    const c = repo.commit('base', { 'a.txt': 'a\n', 'types.py': 'fixed\n' });
    const job = {
      inputs: [input('a.txt', 'a\n')],
      reads: [{ path: 'types.py', sha256: sha256Hex('old\n') }],
    };
    expect((await staleInput(repo.root, c, job)).stale).toEqual({
      path: 'types.py',
      minted: sha256Hex('old\n'),
      held: `sha256 ${sha256Hex('fixed\n').slice(0, 12)}`,
      heldSha256: sha256Hex('fixed\n'),
    });
    const same = { ...job, reads: [{ path: 'types.py', sha256: sha256Hex('fixed\n') }] };
    expect((await staleInput(repo.root, c, same)).stale).toBeNull();
  });

  it('names an input the commit holds as a symlink, even one whose target text has the minted bytes', async () => {
    const repo = tempGitRepo('gj-minted-');
    repo.commit('base', { 'a.txt': 'a\n' });
    unlinkSync(join(repo.root, 'a.txt'));
    symlinkSync('target', join(repo.root, 'a.txt'));
    repo.git(['add', 'a.txt']);
    const c = repo.commit('link', {});
    expect((await staleInput(repo.root, c, { inputs: [input('a.txt', 'target')] })).stale).toEqual({
      path: 'a.txt',
      minted: sha256Hex('target'),
      held: 'an entry of mode 120000',
      heldSha256: null,
    });
  });

  it('with no commit (an unborn branch, a root commit): only files to create hold', async () => {
    const repo = tempGitRepo('gj-minted-');
    expect((await staleInput(repo.root, null, { inputs: [input('n.txt', null)] })).stale).toBeNull();
    expect((await staleInput(repo.root, null, { inputs: [input('a.txt', 'a\n')] })).stale).toMatchObject({
      path: 'a.txt',
      held: 'absent',
    });
  });
});
