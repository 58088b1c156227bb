// The hooks genjob writes end with the sha256 of every byte above: a hook is genjob's to rewrite only
// while its bytes are exactly what genjob wrote. The pre-push hook, run by sh (dash here) with a recorder
// in genjob's place, checks a new branch from where it leaves the branches the remote lists, under that
// commit's policy, however the remote is named.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hookScript, isGenjobHook } from '../../src/git/hook-script.js';
import { type Repo, tempGitRepo } from './git-repo.js';

describe('isGenjobHook', () => {
  it.each(['pre-push', 'pre-merge-commit'] as const)(
    'knows the %s hook genjob writes, whatever CLI paths it names',
    (name) => {
      expect(isGenjobHook(hookScript(name, '/usr/bin/node', '/opt/genjob/dist/cli.js'))).toBe(true);
      expect(isGenjobHook(hookScript(name, "/odd path/n'de", '/x'))).toBe(true);
    },
  );

  it('refuses a hook with a check merged in, a byte changed, or its sum line moved', () => {
    const hook = hookScript('pre-push', '/usr/bin/node', '/cli.js');
    const lines = hook.split('\n');
    expect(isGenjobHook(hook.replace('genjob pull', './team-check.sh && genjob pull'))).toBe(false);
    expect(isGenjobHook(`${hook}echo after\n`)).toBe(false);
    expect(isGenjobHook(`${lines.slice(0, 3).join('\n')}\necho inserted\n${lines.slice(3).join('\n')}`)).toBe(
      false,
    );
    expect(isGenjobHook(hook.replace(/sha256:[0-9a-f]{4}/, 'sha256:0000'))).toBe(false);
    expect(isGenjobHook(hook.slice(0, -1))).toBe(false);
    expect(isGenjobHook('#!/bin/sh\n# genjob hook: pre-push, written by `genjob hook install`\n')).toBe(
      false,
    );
  });

  it('ends every hook with its sum line, and runs the gate with the base policy for a new branch', () => {
    const hook = hookScript('pre-push', '/n', '/c');
    expect(hook).toMatch(/\n# genjob hook sha256:[0-9a-f]{64}\n$/);
    expect(hook).toContain('--trust-ref "$base"');
    expect(hookScript('pre-merge-commit', '/n', '/c')).toContain(
      'genjob verify --commits "$heads --not HEAD" --trust-ref HEAD\n',
    );
  });
});

/** A repository with main pushed to a bare remote, its pre-push hook calling a recorder for genjob. */
function pushing() {
  const repo = tempGitRepo('gj-hook-');
  const base = join(repo.root, '..');
  const bare = join(base, 'origin.git');
  repo.git(['init', '-q', '--bare', bare]);
  const main = repo.commit('main', { 'a.txt': 'a\n' });
  repo.git(['push', '-q', bare, 'main']);
  repo.git(['checkout', '-q', '-b', 'feat']);
  const feat = repo.commit('feat', { 'b.txt': 'b\n' });
  const calls = join(base, 'calls');
  // genjob is `NODE CLI ARGS`: the recorder stands for NODE and logs ARGS, one call a line
  const recorder = join(base, 'record.sh');
  writeFileSync(recorder, `#!/bin/sh\nshift\nprintf '%s|' "$@" >> '${calls}'\necho >> '${calls}'\n`, {
    mode: 0o755,
  });
  const hook = join(base, 'pre-push');
  writeFileSync(hook, hookScript('pre-push', recorder, 'cli'));
  const zeros = '0'.repeat(40);
  const push = (r: Repo, remote: string, sha = feat) => {
    writeFileSync(calls, '');
    const run = spawnSync('sh', [hook, remote], {
      cwd: r.root,
      input: `refs/heads/feat ${sha} refs/heads/feat ${zeros}\n`,
      env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1' },
    });
    const verify = readFileSync(calls, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('verify|'));
    return { code: run.status, stderr: run.stderr.toString(), verify };
  };
  return { repo, bare, main, feat, push };
}

describe('the pre-push hook on a new branch', () => {
  it('checks what the remote lacks under the policy of where it leaves the remote, pushed by URL or by a name never fetched', () => {
    const { repo, bare, main, feat, push } = pushing();
    const want = [`verify|--commits|${feat} --not ${main} |--trust-ref|${main}|`];
    expect(push(repo, `file://${bare}`)).toEqual({ code: 0, stderr: '', verify: want });
    repo.git(['remote', 'add', 'other', bare]); // no refs/remotes/other/ yet
    expect(push(repo, 'other')).toEqual({ code: 0, stderr: '', verify: want });
  });

  it('takes the branch’s own policy only when the remote has no branch at all', () => {
    const { repo, feat, push } = pushing();
    const empty = join(repo.root, '..', 'empty.git');
    repo.git(['init', '-q', '--bare', empty]);
    expect(push(repo, empty).verify).toEqual([`verify|--commits|${feat}|--trust-ref|${feat}|`]);
  });

  it('refuses, checking nothing, when the remote has history not here or cannot be asked', () => {
    const { repo, bare, push } = pushing();
    const other = tempGitRepo('gj-hook-other-');
    other.commit('unrelated', { 'c.txt': 'c\n' });
    other.git(['push', '-q', bare, 'main:elsewhere']);
    const refused = push(repo, bare);
    expect(refused).toMatchObject({ code: 1, verify: [] });
    expect(refused.stderr).toBe(
      `genjob hook: refs/heads/feat shares no history here with what ${bare} has (git fetch ${bare} first; a branch unrelated to all of them is pushed unchecked only by git push --no-verify); not pushing\n`,
    );
    const gone = push(repo, join(repo.root, '..', 'nowhere.git'));
    expect(gone.code).not.toBe(0);
    expect(gone.verify).toEqual([]);
  });
});
