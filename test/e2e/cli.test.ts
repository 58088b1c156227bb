// The command line itself: bad usage is exit 2 with one stderr line, help and version are exit 0,
// and help shows examples.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { DEMO_GENERATOR, makeSandbox, mintKey, PKG } from './helpers.js';

describe('usage', () => {
  const bad = [
    {
      name: 'an unknown flag',
      args: ['mint', '--bogus'],
      stderr: "genjob: error: unknown option '--bogus'\n",
    },
    {
      name: 'an unknown command',
      args: ['frobnicate'],
      stderr: "genjob: error: unknown command 'frobnicate'\n",
    },
    {
      name: 'a misspelt command, naming the nearest',
      args: ['shw', 'abcd'],
      stderr: "genjob: error: unknown command 'shw'\n(Did you mean show?)\n",
    },
    { name: 'a non-numeric --timeout', args: ['work', '--once', '--timeout', 'soon'], stderr: null },
    // a wait past a week: no host takes such a time limit, and past ~24.8 days Node's timers fire at once
    // (a --grace that cut the jobs in flight at the first signal, a lease beaten every millisecond)
    ...[
      ['--timeout', '900000'],
      ['--grace', '9999999'],
      ['--lease-ttl', '604801'],
    ].map(([flag, value]) => ({
      name: `a ${flag} past a week`,
      args: ['work', '--watch', flag!, value!],
      stderr: `genjob: error: option '${flag} <seconds>' argument '${value}' is invalid. takes a number of seconds above 0, at most 604800 (a week)\n`,
    })),
    {
      // a script's `--generator "$GEN"` with GEN unset: refused by the host per request before
      name: 'an empty --generator',
      args: ['work', '--once', '--generator', ' '],
      stderr: 'genjob: EGJ_USAGE: the generator command is empty\n',
    },
    {
      name: 'work without a mode',
      args: ['work', '--generator', 'true'],
      stderr: 'genjob: EGJ_USAGE: choose exactly one of --once, --drain or --watch\n',
    },
    {
      name: 'verify with neither a key nor --all',
      args: ['verify'],
      stderr:
        'genjob: EGJ_USAGE: name a key (or a unique prefix of 4+ characters), or pass --all or --run NAME; no job is received yet (genjob status shows where each one is)\n',
    },
    {
      name: 'apply with a key and --all',
      args: ['apply', '--all', 'abcd'],
      stderr: 'genjob: EGJ_USAGE: give a key or --all, not both\n',
    },
    // --gated took the run's gate record and dropped the key: the whole run was applied
    {
      name: 'apply --gated with a key and --run',
      args: ['apply', 'abcd', '--run', 'r', '--gated'],
      stderr: 'genjob: EGJ_USAGE: give a key or --run, not both\n',
    },
  ];
  // an empty path names the current directory (or nothing): a report written into the repository's root
  for (const args of [
    ['report', '--out', ''],
    ['status', '--root', ''],
    ['keygen', '--out', ''],
    ['cache', 'prune', '--cache-dir', ''],
    ['work', '--once', '--host', 'h', '--ssh-config', ''],
  ])
    bad.push({
      name: `an empty path: ${args.join(' ')}''`,
      args,
      stderr: `genjob: error: option '${args.at(-2)} <${args.at(-2) === '--ssh-config' || args[0] === 'keygen' ? 'file' : 'dir'}>' argument '' is invalid. takes a path, not an empty one\n`,
    });
  for (const c of bad) {
    it(`exits 2 for ${c.name}`, async () => {
      const sb = await makeSandbox();
      const r = await sb.genjob(c.args);
      expect(r.exitCode).toBe(2);
      if (c.stderr !== null) expect(r.stderr.startsWith(c.stderr)).toBe(true);
      else
        expect(r.stderr).toMatch(/^genjob: error: option '--timeout <seconds>' argument 'soon' is invalid/);
    });
  }

  it('work with a generator command no host takes says so before claiming, not after spending every attempt', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a timeout', ['src/user.py']);
    const generator = `true ${'#'.repeat(5000)}`;
    const r = await sb.genjob(['work', '--drain', '--generator', generator]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(
      'genjob: EGJ_USAGE: the generator command is 5,005 characters, more than the 4,096 a host takes: put it in a script and name that (--generator ./gen.sh)\n',
    );
    // still queued, no attempt spent
    const jobs = JSON.parse((await sb.genjob(['status', '--json'])).stdout).jobs;
    expect(jobs).toMatchObject([{ key, state: 'queue', epoch: 0 }]);
  });

  it("work --shadow with an empty name (a script's unset variable) is refused, never run as live work", async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a timeout', ['src/user.py']);
    const r = await sb.genjob(['work', '--drain', '--shadow', '', '--generator', 'true']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/^genjob: EGJ_BAD_SHADOW_NAME: "": a shadow plane name is/);
    const jobs = JSON.parse((await sb.genjob(['status', '--json'])).stdout).jobs;
    expect(jobs).toMatchObject([{ key, state: 'queue', epoch: 0 }]);
  });

  it('inject: a remote that git would read as an option (--upload-pack=CMD) runs nothing: push and pull refuse it, typed or from the git config', async () => {
    const sb = await makeSandbox();
    const marker = join(sb.base, 'pwned');
    const evil = `--upload-pack=touch ${marker};`;
    for (const command of ['push', 'pull']) {
      const r = await sb.genjob([command, '--', evil]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toBe(
        `genjob: EGJ_USAGE: remote ${JSON.stringify(evil)}: give a remote's name or URL (one starting with "-" would be an option to git)\n`,
      );
    }
    // the branch's remote, read from git's config when none is named
    await execa('git', ['commit', '-q', '--allow-empty', '-m', 'x'], {
      cwd: sb.repo,
      env: {
        GIT_AUTHOR_NAME: 'a',
        GIT_AUTHOR_EMAIL: 'a@a',
        GIT_COMMITTER_NAME: 'a',
        GIT_COMMITTER_EMAIL: 'a@a',
      },
    });
    const branch = (await execa('git', ['symbolic-ref', '--short', 'HEAD'], { cwd: sb.repo })).stdout;
    await execa('git', ['config', `branch.${branch}.remote`, evil], { cwd: sb.repo });
    for (const command of ['push', 'pull']) expect((await sb.genjob([command])).exitCode).toBe(2);
    expect(existsSync(marker)).toBe(false);
  });

  it("pull and push without the remote say which remote, with git's line naming what failed", async () => {
    const sb = await makeSandbox();
    await mintKey(sb, 'Add a line', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--generator', 'echo x >> README.md'])).exitCode).toBe(0);
    for (const [command, doing] of [
      ['pull', 'pull from origin'],
      ['push', 'push to origin'],
    ] as const) {
      const r = await sb.genjob([command]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^genjob: EGJ_GIT: ${doing}: git \\S+ \\S+ failed \\(exit 128\\): fatal: 'origin' does not appear to be a git repository \\| `,
        ),
      );
    }
  });

  it('apply or verify without a key names the received jobs it could mean', async () => {
    const sb = await makeSandbox();
    const keys = [
      await mintKey(sb, 'Add a timeout', ['src/user.py']),
      await mintKey(sb, 'Explain the config', ['README.md']),
      await mintKey(sb, 'Test the timeout', ['tests/test_user.py']),
      await mintKey(sb, 'Write a changelog', ['CHANGES.md'], ['--create']),
    ];
    expect((await sb.genjob(['work', '--drain', '--quiet', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
    // three short keys, in the order the state directory lists them, then how many more
    const shown = keys.map((k) => k.slice(0, 12)).sort();
    for (const command of ['apply', 'verify']) {
      const r = await sb.genjob([command]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toBe(
        `genjob: EGJ_USAGE: name a key (or a unique prefix of 4+ characters), or pass --all or --run NAME; received: ${shown.slice(0, 3).join(', ')} and 1 more\n`,
      );
    }
  });

  const hints = [
    { args: ['mint', '--bogus'], hint: '(run genjob mint --help for usage)' },
    { args: ['trust', 'add'], hint: '(run genjob trust add --help for usage)' },
    { args: ['frobnicate'], hint: '(run genjob --help for usage)' },
  ];
  for (const c of hints) {
    it(`after a usage error of "genjob ${c.args.join(' ')}", names the help to run: ${c.hint}`, async () => {
      const sb = await makeSandbox();
      const r = await sb.genjob(c.args);
      expect(r.exitCode).toBe(2);
      expect(r.stderr.trimEnd().split('\n').at(-1)).toBe(c.hint);
    });
  }

  it('--help ends with the absolute path of the docs/ installed with the CLI', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['--help']);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe(`Docs: ${join(PKG, 'docs')} (start with cli.md)`);
    expect(existsSync(join(PKG, 'docs', 'cli.md'))).toBe(true);
  });

  it('--json usage errors say what is wrong: the subcommands of a group given none, no "error: " prefix', async () => {
    const sb = await makeSandbox();
    for (const [args, message] of [
      [['trust', '--json'], 'trust needs a subcommand: add, list, remove (genjob trust --help for usage)'],
      [['hook', '--json'], 'hook needs a subcommand: install, uninstall (genjob hook --help for usage)'],
      [['config', '--json'], 'config needs a subcommand: allow (genjob config --help for usage)'],
      [['cache', '--json'], 'cache needs a subcommand: prune (genjob cache --help for usage)'],
      [['mint', '--bogus', '--json'], "unknown option '--bogus'"],
    ] as const) {
      const r = await sb.genjob([...args]);
      expect(r.exitCode).toBe(2);
      expect(JSON.parse(r.stdout)).toEqual({
        schema: 'genjob/result@1',
        ok: false,
        code: 'EGJ_USAGE',
        message,
      });
    }
  });

  it('prints the version as a JSON result with --version --json, in either order', async () => {
    const sb = await makeSandbox();
    const version = JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8')).version;
    for (const args of [
      ['--version', '--json'],
      ['--json', '-V'],
    ]) {
      const r = await sb.genjob(args);
      expect(r.exitCode).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ schema: 'genjob/result@1', ok: true, version });
    }
  });

  it('exits 0 for --help and shows the loop and the exit codes', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('\nExamples:\n  genjob mint -m "Add a timeout to fetch_user" src/user.py');
    expect(r.stdout).toContain('genjob verify --all && genjob apply --all');
    expect(r.stdout).toContain('Exit codes: 0 done, 1 bug, 2 bad usage or input, 3 rejected, 4 conflict');
    expect(r.stdout).toContain(
      '75 open: try again later (genjob gate: a run not decided yet;\ngenjob pull: the remote did not answer within --timeout),\n130 work stopped by SIGINT',
    );
  });

  it('exits 2 when no command is given, showing the help on stderr', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob([]);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('Usage: genjob [options] [command]');
  });

  const withExamples = ['mint', 'work'];
  for (const command of withExamples) {
    it(`exits 0 for ${command} --help and shows examples`, async () => {
      const sb = await makeSandbox();
      const r = await sb.genjob([command, '--help']);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain('\nExamples:\n  genjob ');
    });
  }

  it('exits 0 for --version and prints the package version', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['--version']);
    expect(r).toMatchObject({
      exitCode: 0,
      stdout: `${JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8')).version}\n`,
    });
  });
});
