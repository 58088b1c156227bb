// The command line itself: bad usage is exit 2 with one stderr line, help and version are exit 0,
// and help shows examples.
import { describe, expect, it } from 'vitest';
import { makeSandbox } from './helpers.js';

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
    { name: 'a non-numeric --timeout', args: ['work', '--once', '--timeout', 'soon'], stderr: null },
    {
      name: 'work without a mode',
      args: ['work', '--generator', 'true'],
      stderr: 'genjob: EGJ_USAGE: choose exactly one of --once, --drain or --watch\n',
    },
    {
      name: 'verify with neither a key nor --all',
      args: ['verify'],
      stderr:
        'genjob: EGJ_USAGE: name a key (or a unique prefix of 4+ characters), or pass --all or --run NAME\n',
    },
    {
      name: 'apply with a key and --all',
      args: ['apply', '--all', 'abcd'],
      stderr: 'genjob: EGJ_USAGE: give a key or --all, not both\n',
    },
  ];
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

  it('exits 0 for --help and shows the loop and the exit codes', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('\nExamples:\n  genjob mint -m "Add a timeout to fetch_user" src/user.py');
    expect(r.stdout).toContain('genjob verify --all && genjob apply --all');
    expect(r.stdout).toContain('Exit codes: 0 done, 1 bug, 2 bad usage or input, 3 rejected, 4 conflict');
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
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { PKG } = await import('./helpers.js');
    expect(r).toMatchObject({
      exitCode: 0,
      stdout: `${JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8')).version}\n`,
    });
  });
});
