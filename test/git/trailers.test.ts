// The generated commit's message is read back by git itself: `git interpret-trailers --parse` finds
// exactly the Genjob trailers (the signer only when there is one), and parseTrailerLog reads what
// `git log --format=TRAILER_FORMAT` prints for such a commit.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { commitMessage, parseTrailerLog, TRAILER_FORMAT } from '../../src/git/trailers.js';

const key = 'a'.repeat(64);
const digest = 'b'.repeat(64);
let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

const git = (cwd: string, args: string[], input?: string) =>
  execFileSync('git', args, {
    cwd,
    input,
    env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C' },
  }).toString('utf8');

describe('commitMessage', () => {
  it('puts the first line of the instruction above a trailer block git parses, with the signer when signed', () => {
    const msg = commitMessage('Add a timeout\nto fetch_user\n\nKey: not a trailer', key, digest, 'ci-host');
    expect(msg).toBe(
      `Add a timeout\n\nGenjob-Key: ${key}\nGenjob-Receipt: sha256:${digest}\nGenjob-Signer: ci-host\n`,
    );
    expect(git(tmpdir(), ['interpret-trailers', '--parse'], msg)).toBe(
      `Genjob-Key: ${key}\nGenjob-Receipt: sha256:${digest}\nGenjob-Signer: ci-host\n`,
    );
    expect(commitMessage('', key, digest, null)).toBe(
      `genjob job ${key.slice(0, 12)}\n\nGenjob-Key: ${key}\nGenjob-Receipt: sha256:${digest}\n`,
    );
  });

  it('is read back from a real commit by parseTrailerLog', () => {
    const repo = mkdtempSync(join(tmpdir(), 'gj-trailers-'));
    dirs.push(repo);
    git(repo, ['init', '-q']);
    const tree = git(repo, ['write-tree']).trim();
    const env = ['-c', 'user.name=t', '-c', 'user.email=t@t'];
    const root = git(repo, [...env, 'commit-tree', tree, '-m', 'a person']).trim();
    const gen = git(
      repo,
      [...env, 'commit-tree', tree, '-p', root, '-F', '-'],
      commitMessage('x', key, digest, 'h'),
    ).trim();
    const log = git(repo, ['log', '-z', '--reverse', `--format=${TRAILER_FORMAT}`, gen]);
    expect(parseTrailerLog(log)).toEqual([
      { commit: root, parents: [], keys: [], receipts: [], signers: [] },
      { commit: gen, parents: [root], keys: [key], receipts: [`sha256:${digest}`], signers: ['h'] },
    ]);
  });
});
