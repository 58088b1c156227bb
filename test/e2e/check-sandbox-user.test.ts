// `check` run as root runs its checker commands as the sandbox user (nobody unless --sandbox-user names
// another): the checked code is generated, and root inside bubblewrap read every root-only file the
// sandbox shows and was exempt from RLIMIT_NPROC. What a setup made as that user is handed back to root
// before it is cached, readable by later runs. --sandbox-user root keeps root's sandbox. Real bwrap, the
// built CLI, run as root.
import { lstatSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CALC_GOOD, checkRepo, checkResults, factsOf, records } from './check-helpers.js';

const asRoot = process.getuid?.() === 0;

const strays: string[] = [];
afterEach(() => {
  for (const p of strays.splice(0)) rmSync(p, { recursive: true, force: true });
});

describe.skipIf(!asRoot)('checked as root, the checker runs as the sandbox user', () => {
  it('escape: checked as root a checker cannot read a root-only file under /usr or /opt', async () => {
    const attacks: Record<string, string> = {};
    for (const parent of ['/usr/local/share', '/opt']) {
      const dir = join(parent, `gj-check-root-only-${process.pid}`);
      strays.push(dir);
      mkdirSync(dir, { mode: 0o755 });
      writeFileSync(join(dir, 'token'), 'TOKEN\n', { mode: 0o600 });
      mkdirSync(join(dir, 'private'), { mode: 0o700 });
      writeFileSync(join(dir, 'private', 'rules'), 'RULE\n', { mode: 0o644 });
      const name = parent === '/opt' ? 'opt' : 'usr';
      attacks[`read-${name}-token`] = `cat ${dir}/token`;
      attacks[`read-${name}-dir`] = `cat ${dir}/private/rules`;
    }
    const r = await checkRepo({
      uid: { run: 'test "$(id -u)" = 65534' },
      ...Object.fromEntries(Object.entries(attacks).map(([n, run]) => [n, { run }])),
    });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', '--json', key]);
    expect(run.exitCode, run.stderr).toBe(3);
    const verdicts = Object.fromEntries(checkResults(run).map((x) => [x.checker, x.verdict]));
    expect(verdicts).toEqual({
      uid: 'pass',
      'read-usr-token': 'fail',
      'read-usr-dir': 'fail',
      'read-opt-token': 'fail',
      'read-opt-dir': 'fail',
    });
  });

  it('hostile: a checker fork bomb is held by the process limit and the check ends before its timeout', async () => {
    const bomb = 'i=0; while [ $i -lt 5000 ]; do sleep 120 & i=$((i+1)); done; wait';
    const r = await checkRepo({ bomb: { run: bomb, timeout: 40 } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const started = Date.now();
    const run = await r.genjob(['check', '--json', key]);
    const took = Date.now() - started;
    expect(run.exitCode, run.stderr).toBe(3);
    expect(checkResults(run)[0]).toMatchObject({ checker: 'bomb', verdict: 'fail' });
    const [rec] = records(r.repo, key, 'bomb');
    const facts = factsOf(r.repo, key, 'bomb', rec!) as { attempts: Array<{ timed_out: boolean }> };
    expect(facts.attempts[0]).toMatchObject({ timed_out: false });
    expect(took).toBeLessThan(30_000);
  }, 90_000);

  it('a setup made as the sandbox user is cached as root’s, and later runs read even what it kept private', async () => {
    const r = await checkRepo({
      tests: {
        run: 'cat node_modules/private.txt && test "$(id -u)" = 65534',
        setup:
          'mkdir -p node_modules && echo made > node_modules/private.txt && chmod 600 node_modules/private.txt',
      },
    });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const first = await r.genjob(['check', '--json', key]);
    expect(first.exitCode, first.stderr).toBe(0);
    const [entry] = readdirSync(join(r.repo, '.gen', 'check-setup'));
    const file = lstatSync(
      join(r.repo, '.gen', 'check-setup', entry!, 'tree', 'node_modules', 'private.txt'),
    );
    expect({ uid: file.uid, mode: file.mode & 0o777 }).toEqual({ uid: 0, mode: 0o604 });
    // the cached entry, read by the next run as the sandbox user
    const again = await r.genjob(['check', '--json', '--recheck', key]);
    expect(again.exitCode, again.stderr).toBe(0);
    const record = `${checkResults(again)[0]!.record as string}.json`;
    expect(factsOf(r.repo, key, 'tests', record)).toMatchObject({ setup: { cached: true } });
  });

  it('--sandbox-user root keeps the checker root', async () => {
    const r = await checkRepo({ uid: { run: 'test "$(id -u)" = 0' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', '--json', '--sandbox-user', 'root', key]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(checkResults(run)[0]).toMatchObject({ checker: 'uid', verdict: 'pass' });
  });
});
