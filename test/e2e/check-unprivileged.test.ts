// `check` as an unprivileged user, whose permission checks root never meets: the checked code takes its
// owner's bits from a directory it made (`chmod 000 d`). The check still records what the code did (a
// fail), and nothing it left stops the next check: the scratch tree, and a dead check's staging the
// sweep finds, are removed whatever their modes; and a setuid file its setup leaves is kept without the
// bit (it would run as this user for anyone). Run as nobody through setpriv (only root can).
import { spawnSync } from 'node:child_process';
import { chownSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CALC_GOOD, checkRepo, checkResults, records } from './check-helpers.js';
import { CLI } from './helpers.js';

const NOBODY = 65534;
const canSetpriv = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

/** Give `path` and everything under it to nobody. */
function own(path: string): void {
  chownSync(path, NOBODY, NOBODY);
  if (lstatSync(path).isDirectory()) for (const n of readdirSync(path)) own(join(path, n));
}

/** Run the built CLI as nobody in `cwd`. */
async function asNobody(args: readonly string[], cwd: string, env: Record<string, string>) {
  const p = await execa(
    'setpriv',
    [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, CLI, ...args],
    { cwd, env, reject: false },
  );
  return { exitCode: p.exitCode, stdout: String(p.stdout), stderr: String(p.stderr) };
}

describe.skipIf(!canSetpriv)('check as an unprivileged user', () => {
  it('escape: a setuid shell setup leaves is cached without the bit: no other user runs it as this one', async () => {
    const r = await checkRepo({
      tests: {
        run: 'true',
        setup: 'mkdir -p node_modules && cp /bin/sh node_modules/mysh && chmod 6755 node_modules/mysh',
      },
    });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    own(r.base);
    const run = await asNobody(['check', '--json', key], r.repo, { ...r.env, HOME: join(r.base, 'home') });
    expect(run.exitCode, run.stderr).toBe(0);
    const [entry] = readdirSync(join(r.repo, '.gen', 'check-setup'));
    const sh = lstatSync(join(r.repo, '.gen', 'check-setup', entry!, 'tree', 'node_modules', 'mysh'));
    expect(sh.uid).toBe(NOBODY);
    expect(sh.mode & 0o7777).toBe(0o755);
  });

  it('hostile: a checker fork bomb is held by the process limit and the check ends before its timeout', async () => {
    const bomb = 'i=0; while [ $i -lt 5000 ]; do sleep 120 & i=$((i+1)); done; wait';
    const r = await checkRepo({ bomb: { run: bomb, timeout: 40 } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    own(r.base);
    const started = Date.now();
    const run = await asNobody(['check', '--json', key], r.repo, { ...r.env, HOME: join(r.base, 'home') });
    const took = Date.now() - started;
    expect(run.exitCode, run.stderr).toBe(3);
    expect(checkResults(run)[0]).toMatchObject({ checker: 'bomb', verdict: 'fail' });
    // held, the shell that cannot fork ends the run; not held, it waits for its children until the timeout
    expect(took).toBeLessThan(30_000);
  }, 90_000);

  it('hostile: a checker that locks a directory it made (chmod 000) fails its check, and the next check runs', async () => {
    const r = await checkRepo({ tests: { run: 'mkdir -p d/e && chmod 000 d; exit 1' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    own(r.base);
    const env = { ...r.env, HOME: join(r.base, 'home') };
    const staging = join(r.repo, '.gen', 'staging');
    const first = await asNobody(['check', '--json', key], r.repo, env);
    expect(first.exitCode, first.stderr).toBe(3);
    expect(checkResults(first)[0]).toMatchObject({ verdict: 'fail' });
    expect(records(r.repo, key, 'tests')).toHaveLength(1);
    expect(readdirSync(staging).filter((n) => n.startsWith('.check-'))).toEqual([]);
    // what a check killed midway leaves: a dead process's staging holding a locked directory
    const dead = join(staging, '.check-999999-1-abcdef', 'checkers', 'tests', 'run-1', 'tree');
    const locked = await execa(
      'setpriv',
      [
        `--reuid=${NOBODY}`,
        `--regid=${NOBODY}`,
        '--clear-groups',
        'sh',
        '-c',
        'mkdir -p "$1/d/e" && chmod 000 "$1/d"',
        'sh',
        dead,
      ],
      { reject: false },
    );
    expect(locked.exitCode, String(locked.stderr)).toBe(0);
    mkdirSync(join(r.base, 'home'), { recursive: true });
    own(join(r.base, 'home'));
    r.checkers({ tests: { run: 'true' } });
    own(join(r.repo, 'genjob.config.json'));
    const next = await asNobody(['check', '--json', key], r.repo, env);
    expect(next.exitCode, next.stderr).toBe(0);
    expect(checkResults(next)[0]).toMatchObject({ verdict: 'pass' });
    expect(readdirSync(staging).filter((n) => n.startsWith('.check-'))).toEqual([]);
  });
});
