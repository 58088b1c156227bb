// gitSteps runs several git commands in one sh: what each step is given must reach git exactly as git()
// would give it (the script only names positional parameters), a failing step stops the rest and is the
// one the error names, and stdin, the environment and the output cap hold as for one command.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GitFailedError, GitTimedOutError } from '../../src/core/errors.js';
import { git, gitEnv, gitSteps } from '../../src/git/run-git.js';
import { liveProcesses } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-store.js';
import { tempGitRepo } from './git-repo.js';

/** A repository with one commit (the temp dir goes after each test). */
function fresh(parent?: string) {
  const repo = tempGitRepo('run-git', { parent });
  return { repo, head: repo.commit('first', { 'a.txt': 'a\n' }) };
}

/** A step that prints its arguments back, shell-quoted by git itself. */
const echo = (args: readonly string[]) => ['rev-parse', '--sq-quote', ...args];

describe('gitSteps', () => {
  it('inject: arguments that are shell code reach git as they are: no expansion, splitting or quoting by the shell', async () => {
    const { repo } = fresh();
    const nasty = [
      'two words',
      '$HOME',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, never a template
      '${PATH}',
      '`id`',
      '$(id)',
      "it's",
      '"quoted"',
      '*',
      'line\nbreak',
      '\\',
      '-n',
      '',
      ';exit 0',
      '|| true',
      '$1',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, never a template
      '${10}',
    ];
    const steps = [echo(nasty.slice(0, 8)), echo(nasty.slice(8))];
    const got = await gitSteps(repo.root, steps);
    const one = await Promise.all(steps.map((s) => git(repo.root, s)));
    expect(got.stdout.toString('utf8')).toBe(one.map((r) => r.stdout.toString('utf8')).join(''));
    expect(got.stdout.toString('utf8')).toContain(`'$HOME'`);
  });

  it('inject: a repository whose directory name is shell code is only ever an argument to git', async () => {
    // a branch under review may live in a checkout named by anyone: `$(...)`, backticks and a quote
    // that would end the script's own quoting must not run, end or change a step
    const parent = tempDir('run-git-inject');
    const named = join(parent, 'x";exit 7;"`exit 8`$(exit 9)');
    mkdirSync(named);
    const { repo } = fresh(named);
    const r = await gitSteps(repo.root, [['rev-parse', '--show-toplevel'], echo(['after'])]);
    expect(r.code).toBe(0);
    expect(r.stdout.toString('utf8')).toBe(`${repo.root}\n 'after'\n`);
  });

  it('passes any arguments through unchanged (property: the same bytes as one git per step)', async () => {
    const { repo } = fresh();
    const arg = fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !s.includes('\0'));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(arg, { maxLength: 5 }), { minLength: 1, maxLength: 4 }),
        async (args) => {
          const steps = args.map(echo);
          const got = await gitSteps(repo.root, steps);
          const one = await Promise.all(steps.map((s) => git(repo.root, s)));
          expect(got.stdout.equals(Buffer.concat(one.map((r) => r.stdout)))).toBe(true);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('stops at the first step that fails and names that step and its exit code', async () => {
    const { repo, head } = fresh();
    const err = await gitSteps(repo.root, [
      echo(['first']),
      ['rev-parse', '--verify', '--quiet', 'refs/heads/no-such-branch'],
      ['update-ref', 'refs/heads/made-after-failure', head],
    ]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitFailedError);
    expect((err as GitFailedError).args.slice(0, 2)).toEqual(['rev-parse', '--verify']);
    expect((err as GitFailedError).status).toBe(1);
    // the step after the failure never ran
    expect(() => repo.git(['rev-parse', '--verify', '--quiet', 'refs/heads/made-after-failure'])).toThrow();
  });

  it("reports git's own message and code when a step dies", async () => {
    const { repo } = fresh();
    const err = await gitSteps(repo.root, [echo(['x']), ['cat-file', '-p', 'no-such-object']]).catch(
      (e: unknown) => e as GitFailedError,
    );
    expect(err).toBeInstanceOf(GitFailedError);
    expect((err as GitFailedError).status).toBe(128);
    expect((err as GitFailedError).message).toMatch(/git cat-file -p failed \(exit 128\): .*no-such-object/);
  });

  it('gives stdin to the step that reads it and the environment to every step', async () => {
    const { repo, head } = fresh();
    const index = `${repo.root}/../steps-index`;
    const r = await gitSteps(
      repo.root,
      [
        ['read-tree', head],
        ['hash-object', '--stdin'],
        ['ls-files', '-s'],
      ],
      { input: 'piped\n', env: { GIT_INDEX_FILE: index } },
    );
    const [oid, ...listed] = r.stdout.toString('utf8').trimEnd().split('\n');
    expect(oid).toBe(repo.git(['hash-object', '--stdin'], 'piped\n'));
    // ls-files read the private index read-tree wrote, not the repository's own
    expect(listed).toEqual([`100644 ${repo.git(['rev-parse', `${head}:a.txt`])} 0\ta.txt`]);
  });

  it("inject: a step's stdin file is read as named, its name only ever an argument; the others keep the sh's stdin", async () => {
    const { repo } = fresh();
    const parent = tempDir('run-git-stdin');
    const named = join(parent, 'in";exit 7;"`exit 8`$(exit 9) $HOME');
    writeFileSync(named, 'from the file\n');
    const r = await gitSteps(
      repo.root,
      [['hash-object', '--stdin'], { args: ['hash-object', '--stdin'], stdinFile: named }, echo(['after'])],
      { input: 'piped\n' },
    );
    expect(r.stdout.toString('utf8')).toBe(
      `${repo.git(['hash-object', '--stdin'], 'piped\n')}\n${repo.git(['hash-object', '--stdin'], 'from the file\n')}\n 'after'\n`,
    );
    // a stdin file that cannot be opened fails its step, which the error names
    const err = await gitSteps(repo.root, [
      echo(['x']),
      { args: ['hash-object', '--stdin'], stdinFile: join(parent, 'missing') },
    ]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitFailedError);
    expect((err as GitFailedError).args).toEqual(['hash-object', '--stdin']);
  });

  it('refuses output past the cap, as one git does', async () => {
    const { repo } = fresh();
    const err = await gitSteps(repo.root, [echo(['x'.repeat(100)]), echo(['y'])], { maxOutput: 50 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GitFailedError);
    expect((err as GitFailedError).message).toMatch(/larger than 50 bytes; refused/);
  });
});

describe('git with bounds', () => {
  it('hostile: kills git at timeoutMs with every command it started (exit 75)', async () => {
    const { repo } = fresh();
    // an alias git runs as a child of its own, marked by its argument, that would outlive git alone
    const mark = ['sleep', '876.543'];
    try {
      const err = await git(repo.root, ['-c', `alias.stall=!${mark.join(' ')}`, 'stall'], {
        timeoutMs: 500,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GitTimedOutError);
      expect((err as GitTimedOutError).exitCode).toBe(75);
      expect((err as GitTimedOutError).message).toBe(
        'git -c alias.stall=!sleep 876.543 did not finish within 0.5 s; it was stopped, with every process it started',
      );
      await expect.poll(() => liveProcesses(mark)).toEqual([]);
    } finally {
      for (const pid of liveProcesses(mark)) process.kill(pid, 'SIGKILL');
    }
  });

  it('hostile: a process git started that left its session, and one that left its tree too (setsid -f), is killed at timeoutMs', async () => {
    const { repo } = fresh();
    // one in a session of its own under git's sh, one handed to init: neither is in git's process group
    const inSession = ['sleep', '871.101'];
    const orphan = ['sleep', '871.102'];
    const stall = `!setsid -f ${orphan.join(' ')} && setsid ${inSession.join(' ')}`;
    try {
      const err = await git(repo.root, ['-c', `alias.stall=${stall}`, 'stall'], { timeoutMs: 1000 }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(GitTimedOutError);
      await expect.poll(() => [...liveProcesses(inSession), ...liveProcesses(orphan)]).toEqual([]);
    } finally {
      for (const pid of [...liveProcesses(inSession), ...liveProcesses(orphan)]) process.kill(pid, 'SIGKILL');
    }
  });

  it("git bounded in time stays in this process's session and process group (ssh keeps the terminal)", async () => {
    const { repo } = fresh();
    /** A process's group and session, from its /proc stat. */
    const ids = (stat: string) =>
      stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .slice(2, 4);
    const r = await git(repo.root, ['-c', 'alias.ids=!cat /proc/$$/stat', 'ids'], { timeoutMs: 600_000 });
    expect(ids(r.stdout.toString('utf8'))).toEqual(ids(readFileSync('/proc/self/stat', 'utf8')));
  });

  it('a command that ends in time is not stopped, and leaves no signal handler behind', async () => {
    const { repo, head } = fresh();
    const before = process.listenerCount('SIGINT');
    const r = await git(repo.root, ['rev-parse', 'HEAD'], { timeoutMs: 600_000 });
    expect(r.stdout.toString('utf8').trim()).toBe(head);
    expect(process.listenerCount('SIGINT')).toBe(before);
  });

  it('hostile: maxFileBytes stops git as it writes a file past it, and lets a smaller one through', async () => {
    const { repo } = fresh();
    const data = randomBytes(64 * 1024); // incompressible: its loose object is as large
    const err = await git(repo.root, ['hash-object', '-w', '--stdin'], {
      input: data,
      maxFileBytes: 16 * 1024,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitFailedError);
    const oid = (await git(repo.root, ['hash-object', '--stdin'], { input: data })).stdout
      .toString('utf8')
      .trim();
    expect((await git(repo.root, ['cat-file', '-e', oid], { okCodes: [1, 128] })).code).not.toBe(0);
    await git(repo.root, ['hash-object', '-w', '--stdin'], { input: data, maxFileBytes: 1024 * 1024 });
    expect((await git(repo.root, ['cat-file', '-e', oid])).code).toBe(0);
  });
});

describe('gitEnv', () => {
  // the contract, by purpose (the list in run-git.ts must hold exactly these)
  const user = ['PATH', 'HOME', 'USER', 'LOGNAME', 'TMPDIR', 'XDG_CONFIG_HOME'];
  const ssh = ['SSH_AUTH_SOCK', 'GIT_SSH', 'GIT_SSH_COMMAND', 'GIT_SSH_VARIANT'];
  const identity = ['GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL'];
  const config = ['GIT_CONFIG_GLOBAL', 'GIT_CONFIG_NOSYSTEM'];
  const PASSED = [...user, ...ssh, ...identity, ...config];
  const DROPPED = [
    'GIT_DIR',
    'GIT_INDEX_FILE',
    'GIT_WORK_TREE',
    'GIT_OBJECT_DIRECTORY',
    'GIT_NAMESPACE',
    'LD_PRELOAD',
  ];

  it("passes identity, ssh and the user's config, and nothing else of the caller's environment", () => {
    const saved = { ...process.env };
    try {
      for (const name of [...PASSED, ...DROPPED]) process.env[name] = `value of ${name}`;
      const env = gitEnv();
      for (const name of PASSED) expect(env[name]).toBe(`value of ${name}`);
      for (const name of DROPPED) expect(env).not.toHaveProperty(name);
      // no prompt, messages in C, no askpass program, no replace refs (a forged commit read as another)
      expect(env).toMatchObject({
        LC_ALL: 'C',
        GIT_TERMINAL_PROMPT: '0',
        GIT_ASKPASS: '',
        SSH_ASKPASS: '',
        GIT_NO_REPLACE_OBJECTS: '1',
      });
      expect(Object.keys(env).sort()).toEqual(
        [
          ...PASSED,
          'LC_ALL',
          'GIT_TERMINAL_PROMPT',
          'GIT_ASKPASS',
          'SSH_ASKPASS',
          'GIT_NO_REPLACE_OBJECTS',
        ].sort(),
      );
      expect(gitEnv({ GIT_INDEX_FILE: '/x', LC_ALL: 'fr_FR' })).toMatchObject({
        GIT_INDEX_FILE: '/x',
        LC_ALL: 'fr_FR',
      });
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });
});
