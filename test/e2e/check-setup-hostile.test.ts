// A checker's setup result is shared: every job whose setup digest matches runs against it. These tests
// attack that sharing: a job whose generated files shape the setup of every other job, a commit that turns
// a directory the setup result is linked into into a symbolic link out of the scratch tree, a forged
// entry left under the predictable digest, and a branch whose change to a script setup runs (no pin
// names it) would shape the result another branch reuses. None may turn a failing change into a pass or
// write outside the scratch tree.

import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { setupDigest } from '../../src/check/setup-cache.js';
import { CALC_BAD, CALC_GOOD, checkRepo, checkResults, factsOf, records, UNITTEST } from './check-helpers.js';

const npmPackage = (scripts: Record<string, string>) =>
  `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true, scripts }, null, 2)}\n`;
const NPM_TEST = [
  "const { add } = require('./calc.js');",
  "if (add(2, 3) !== 5) { console.error('add is wrong'); process.exit(1); }",
  "console.log('ok');",
  '',
].join('\n');

/** Whether anything (a file, a directory, a link, even a dangling one) is at `path`. */
const present = (path: string) => lstatSync(path, { throwIfNoEntry: false }) !== undefined;

describe('a shared setup result under attack', () => {
  it("one job's generated package.json (a postinstall) never shapes the setup another job's check runs on", async () => {
    const r = await checkRepo(
      { tests: { run: 'npm test', setup: 'npm ci --offline --no-audit --no-fund' } },
      {
        'package.json': npmPackage({ test: 'node test.js' }),
        'calc.js': 'exports.add = (a, b) => a + b;\n',
        'test.js': NPM_TEST,
      },
    );
    await execa('npm', ['install', '--package-lock-only', '--offline'], { cwd: r.repo });
    await r.git(['add', '-A']);
    await r.git(['commit', '-qm', 'an npm project']);
    const broken = await r.generate('Make add faster', { 'calc.js': 'exports.add = (a, b) => a - b;\n' });
    // a generated package.json whose postinstall plants a `node` that passes anything
    const plant =
      "mkdir -p node_modules/.bin && printf '#!/bin/sh\\necho forged ok\\n' > node_modules/.bin/node && chmod +x node_modules/.bin/node";
    const hostile = await r.generate('Add a lint script', {
      'package.json': npmPackage({ test: 'node test.js', postinstall: plant }),
    });
    const first = await r.genjob(['check', '--json', hostile]);
    expect(first.exitCode, first.stderr).not.toBe(2);
    const second = await r.genjob(['check', '--json', broken]);
    expect(checkResults(second)[0], second.stdout).toMatchObject({ verdict: 'fail' });
    const facts = factsOf(r.repo, broken, 'tests', records(r.repo, broken, 'tests')[0]!);
    expect((facts.setup as { cached: boolean }).cached).toBe(true);
    const [entry] = readdirSync(join(r.repo, '.gen', 'check-setup'));
    expect(present(join(r.repo, '.gen', 'check-setup', entry!, 'tree', 'node_modules', '.bin', 'node'))).toBe(
      false,
    );
  });

  it('forged: a branch changing an unpinned script that setup runs never shapes the setup another commit reuses', async () => {
    const r = await checkRepo(
      { tests: { run: 'grep -q good build/ver', setup: 'sh mk.sh' } },
      { 'mk.sh': 'mkdir -p build; echo bad > build/ver\n' },
    );
    await r.git(['checkout', '-qb', 'pr']);
    r.write('mk.sh', 'mkdir -p build; echo good > build/ver\n');
    await r.git(['commit', '-qam', 'the PR changes mk.sh only']);
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    // reviewing the PR: its setup runs and its result is cached
    const onPr = await r.genjob(['check', '--json', key]);
    expect(checkResults(onPr)[0], onPr.stdout).toMatchObject({ verdict: 'pass' });
    await r.git(['checkout', '-q', 'main']);
    const onMain = await r.genjob(['check', '--json', key]);
    expect(checkResults(onMain)[0], onMain.stdout).toMatchObject({ verdict: 'fail' });
    // newest first: main's own setup ran, and a recheck on the same commit reuses what it made
    const bySequence = () =>
      records(r.repo, key, 'tests')
        .map((n) => factsOf(r.repo, key, 'tests', n))
        .sort((a, b) => (b.sequence as number) - (a.sequence as number));
    expect((bySequence()[0]!.setup as { cached: boolean }).cached).toBe(false);
    const again = await r.genjob(['check', '--json', '--recheck', key]);
    expect(checkResults(again)[0], again.stdout).toMatchObject({ verdict: 'fail' });
    expect((bySequence()[0]!.setup as { cached: boolean }).cached).toBe(true);
  });

  it('escape: a setup that leaves a setuid shell, a setgid directory and a FIFO publishes none of them as such', async () => {
    const setup = [
      'mkdir -p node_modules/d',
      'cp /bin/sh node_modules/rootsh',
      'chmod 4755 node_modules/rootsh',
      'cp /bin/sh node_modules/groupsh',
      'chmod 2755 node_modules/groupsh',
      'chmod 3777 node_modules/d',
      'mkfifo node_modules/fifo',
      'ln -s rootsh node_modules/link',
    ].join(' && ');
    const r = await checkRepo({ tests: { run: UNITTEST, setup } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', '--json', key]);
    expect(checkResults(run)[0], run.stdout).toMatchObject({ verdict: 'pass' });
    const [entry] = readdirSync(join(r.repo, '.gen', 'check-setup'));
    const nm = join(r.repo, '.gen', 'check-setup', entry!, 'tree', 'node_modules');
    const mode = (name: string) => lstatSync(join(nm, name)).mode & 0o7777;
    expect(mode('rootsh')).toBe(0o755);
    expect(mode('groupsh')).toBe(0o755);
    expect(mode('d')).toBe(0o777);
    expect(present(join(nm, 'fifo'))).toBe(false);
    expect(lstatSync(join(nm, 'link')).isSymbolicLink()).toBe(true);
    if (process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0) {
      // run by another user, the shell setup made as root is that user's shell, not root's
      const id = spawnSync(
        'setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', join(nm, 'rootsh'), '-p', '-c', 'id -u; id -g'],
        { encoding: 'utf8', cwd: '/' },
      );
      expect(id.stdout).toBe('65534\n65534\n');
    }
    // the entry, plain, is sealed and serves again
    const again = await r.genjob(['check', '--json', '--recheck', key]);
    expect(checkResults(again)[0], again.stdout).toMatchObject({ verdict: 'pass' });
    const facts = records(r.repo, key, 'tests').map((n) => factsOf(r.repo, key, 'tests', n));
    expect(facts.map((f) => (f.setup as { cached: boolean }).cached).sort()).toEqual([false, true]);
  });

  it('links the cached setup result only through real directories: a tracked symbolic link is not followed', async () => {
    const r = await checkRepo(
      { tests: { run: UNITTEST, setup: 'mkdir -p vendor/cache && echo dep > vendor/cache/dep.txt' } },
      { 'vendor/README': 'vendored things\n' },
    );
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    expect((await r.genjob(['check', key])).exitCode).toBe(0); // the entry now holds vendor/cache
    // the next commit makes vendor/ a link to a directory of the user's
    rmSync(join(r.repo, 'vendor'), { recursive: true });
    symlinkSync(r.outside, join(r.repo, 'vendor'));
    await r.git(['add', '-A']);
    await r.git(['commit', '-qm', 'vendor is a link now']);
    const again = await r.genjob(['check', '--json', key]);
    expect(again.exitCode, again.stderr).not.toBe(1);
    expect(readdirSync(r.outside)).toEqual([]);
  });

  it('never trusts a setup entry left under the predictable digest (as a checkout of a branch leaves it): setup runs again and the change fails', async () => {
    const r = await checkRepo({ tests: { run: UNITTEST, setup: 'true' } });
    const key = await r.generate('Break add', { 'calc.py': CALC_BAD });
    // the digest this checker's setup has on this commit (no lockfile), as anyone can compute it
    const head = (await r.git(['rev-parse', 'HEAD^{tree}'])).trim();
    const digest = setupDigest({ setup: 'true', network: false, env: [] }, head, [], 'bwrap');
    const entry = join(r.repo, '.gen', 'check-setup', digest);
    mkdirSync(join(entry, 'tree', 'unittest'), { recursive: true });
    // a `unittest` package in the tree's root shadows the standard library's for `python3 -m unittest`
    writeFileSync(join(entry, 'tree', 'unittest', '__init__.py'), '');
    writeFileSync(join(entry, 'tree', 'unittest', '__main__.py'), "print('forged: OK')\n");
    writeFileSync(join(entry, 'manifest.json'), JSON.stringify({ paths: ['unittest'] }));
    const run = await r.genjob(['check', '--json', key]);
    expect(checkResults(run)[0], run.stdout).toMatchObject({ verdict: 'fail' });
    const facts = factsOf(r.repo, key, 'tests', records(r.repo, key, 'tests')[0]!);
    expect((facts.setup as { cached: boolean }).cached).toBe(false);
    // the forged entry gave way to the one this check sealed
    expect(existsSync(join(entry, 'tree', 'unittest'))).toBe(false);
    const next = await r.genjob(['check', '--json', '--recheck', key]);
    expect(checkResults(next)[0]).toMatchObject({ verdict: 'fail' });
    const latest = records(r.repo, key, 'tests').map((n) => factsOf(r.repo, key, 'tests', n));
    expect(latest.map((f) => (f.setup as { cached: boolean }).cached).sort()).toEqual([false, true]);
  });
});
