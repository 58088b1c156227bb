// genjob report through the built CLI: the default directory (.gen/report/) and its index path on
// stdout, --json, --out, keys and prefixes, a second run that writes nothing, --open through $BROWSER
// (and a browser that cannot start, which is said but not fatal), and each refusal with its exit code.
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { loadCacheSecret } from '../../src/remote/cache-mac.js';
import { CLI, PKG, runCli } from '../e2e/helpers.js';
import { checkRecords } from '../helpers/check-record.js';
import { commitAll } from '../helpers/commit-all.js';
import { traced } from '../helpers/module-trace.js';
import { tempDir } from '../helpers/temp-store.js';
import { fixtureRepo } from './fixture.js';
import { sealRun } from './run-files.js';

function cli(root: string, args: readonly string[], env: Record<string, string> = {}) {
  return runCli(args, { cwd: root, env: { XDG_CACHE_HOME: join(root, '..', 'cache'), ...env } });
}

describe('genjob report', () => {
  it('writes .gen/report/ and prints its index; a second run writes nothing', async () => {
    const { root, jobs } = fixtureRepo(2);
    const r = await cli(root, ['report']);
    expect(r.exitCode).toBe(0);
    const index = join(root, '.gen', 'report', 'index.html');
    expect(r.stdout.split('\n')[0]).toBe(index);
    expect(r.stdout).toContain('2 job(s): 3 page(s) written, 0 unchanged, 0 removed');
    expect(existsSync(join(root, '.gen', 'report', 'jobs', `${jobs[0]!.key}.html`))).toBe(true);
    const again = await cli(root, ['report', '--json']);
    expect(again.exitCode).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      ok: true,
      index,
      jobs: 2,
      written: [],
      unchanged: 3,
      removed: [],
    });
  });

  it('writes only the jobs named (by prefix) into --out', async () => {
    const { root, jobs } = fixtureRepo(3);
    mkdirSync(join(root, 'sub'));
    const r = await runCli(['report', '--json', '--out', 'r', jobs[1]!.key.slice(0, 8)], {
      cwd: join(root, 'sub'),
      env: { XDG_CACHE_HOME: join(root, '..', 'cache') },
    });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      dir: join(root, 'sub', 'r'),
      jobs: 1,
      written: [`jobs/${jobs[1]!.key}.html`, 'index.html'],
    });
  });

  it('refuses an empty --out, which would have named the current directory', async () => {
    const { root } = fixtureRepo(1);
    const r = await runCli(['report', '--out', ''], {
      cwd: root,
      env: { XDG_CACHE_HOME: join(root, '..', 'cache') },
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(
      /^genjob: error: option '--out <dir>' argument '' is invalid\. takes a path, not an empty one\n/,
    );
    expect(existsSync(join(root, 'index.html'))).toBe(false);
  });

  it('opens the index with $BROWSER when asked', async () => {
    const { root } = fixtureRepo(1);
    const seen = join(tempDir('genjob-report-browser-'), 'seen');
    const browser = join(root, '..', 'fake-browser.sh');
    writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > ${JSON.stringify(seen)}\n`, { mode: 0o755 });
    const r = await cli(root, ['report', '--open', '--json'], { BROWSER: browser });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).opened).toBe(true);
    await expect
      .poll(() => (existsSync(seen) ? readFileSync(seen, 'utf8') : ''))
      .toBe(join(root, '.gen', 'report', 'index.html'));
  });

  it('takes $BROWSER with arguments as a program and its arguments, as such variables are', async () => {
    const { root } = fixtureRepo(1);
    const seen = join(tempDir('genjob-report-browser-'), 'seen');
    const browser = join(root, '..', 'fake-browser.sh');
    writeFileSync(browser, `#!/bin/sh\nprintf '%s|%s' "$1" "$2" > ${JSON.stringify(seen)}\n`, {
      mode: 0o755,
    });
    const r = await cli(root, ['report', '--open', '--json'], { BROWSER: `${browser} --new-window` });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).opened).toBe(true);
    await expect
      .poll(() => (existsSync(seen) ? readFileSync(seen, 'utf8') : ''))
      .toBe(`--new-window|${join(root, '.gen', 'report', 'index.html')}`);
  });

  it('says when no browser can be started, and still succeeds', async () => {
    const { root } = fixtureRepo(1);
    const r = await cli(root, ['report', '--open'], { BROWSER: join(root, 'no-such-browser') });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/^genjob: could not start .*no-such-browser.*; open .*index\.html yourself\n$/);
  });

  it('--run NAME: the run’s jobs only, each check cell from its record, and the gate as `genjob gate` closed it; run errors are the run plane’s', async () => {
    const { root, store, jobs } = fixtureRepo(4);
    writeFileSync(join(root, 'genjob.config.json'), JSON.stringify({ checkers: { tests: { run: 'true' } } }));
    const record = await checkRecords(root, store, await commitAll(root));
    const keys = jobs.map((j) => j.key);
    record(keys[0]!, 'tests', [{ outcome: 'pass' }]);
    record(keys[1]!, 'tests', [{ outcome: 'fail' }, { outcome: 'pass' }]);
    record(keys[2]!, 'tests', [{ outcome: 'fail', log: 'FAILED test_m2\n' }]);
    const run = keys.slice(0, 3);
    const cache = join(root, '..', 'cache', 'genjob'); // the CLI's below (cli()), whose secret seals the run
    mkdirSync(cache, { recursive: true });
    await sealRun(store, 'hints', run, await loadCacheSecret(cache));
    const gate = await cli(root, [
      'gate',
      '--run',
      'hints',
      '--require-check',
      'tests',
      '--min-pass',
      '95%',
      '--json',
    ]);
    expect(gate.exitCode, gate.stderr).toBe(3); // closed, not met
    const closed = JSON.parse(gate.stdout).record as { sha256: string };
    const r = await cli(root, ['report', '--run', 'hints', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ jobs: 3 });
    const index = readFileSync(join(root, '.gen', 'report', 'index.html'), 'utf8');
    for (const k of run) expect(index).toContain(`href="jobs/${k}.html"`);
    expect(index).not.toContain(keys[3]!);
    expect(index).toContain('<b class="gate-notmet" id="gate-state">closed: not met</b>');
    expect(index).toContain('1/3 = 33.3%');
    expect(index).toContain('<td>min 95.0%, checks tests</td>');
    expect(index).toContain(`.gen/runs/hints.gates/1.json<br>sha256:${closed.sha256}`);
    const verdicts = [...index.matchAll(/data-checker="tests"[^>]*data-v="(\w+)"/g)].map((m) => m[1]);
    expect(verdicts.sort()).toEqual(['fail', 'flaky', 'pass']);
    const page = readFileSync(join(root, '.gen', 'report', 'jobs', `${keys[2]}.html`), 'utf8');
    expect(page).toContain('FAILED test_m2');
    const unknown = await cli(root, ['report', '--run', 'nope']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/^genjob: EGJ_UNKNOWN_RUN: \S+nope\.json: no run "nope"; mint one with /);
    const bad = await cli(root, ['report', '--run', '../hints']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/^genjob: EGJ_BAD_RUN_NAME: /);
    expect(existsSync(join(root, '.gen', 'report', 'jobs', `${keys[3]}.html`))).toBe(false);
  });

  it('loads no module that reads a config file or decides a check state, nor the run plane, for a repository without a config file', async () => {
    const { root } = fixtureRepo(2);
    const report = () =>
      traced(
        'XDG_CACHE_HOME="$2" "$0" "$1" report',
        [process.execPath, CLI, join(root, '..', 'cache')],
        root,
      );
    const plain = report();
    expect(plain).toContain('loaded src/report/check-source.ts');
    const lazy = ['check/checker', 'check/check-state', 'check/record-store', 'cli/config-file'];
    for (const name of lazy) expect(plain).not.toContain(`src/${name}.ts`);
    expect(plain).not.toContain('src/report/run-source.ts');
    // once a checker is declared, its states are decided as status decides them
    writeFileSync(join(root, 'genjob.config.json'), JSON.stringify({ checkers: { tests: { run: 'true' } } }));
    await commitAll(root);
    const checked = report();
    for (const name of lazy) expect(checked).toContain(`loaded src/${name}.ts`);
  });

  it.each([
    { what: 'an unknown key', args: ['report', 'abcdef12'], code: 'EGJ_UNKNOWN_KEY' },
    { what: 'a run and keys together', args: ['report', '--run', 'r', 'abcdef12'], code: 'EGJ_USAGE' },
  ])('refuses $what with exit 2', async ({ args, code }) => {
    const { root } = fixtureRepo(1);
    const r = await cli(root, args);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`genjob: ${code}: `);
    expect(existsSync(join(root, '.gen', 'report'))).toBe(false);
  });

  it('forged: skips a job file not named by a key (a branch can commit one), says so, and writes no page for it', async () => {
    const { root, jobs } = fixtureRepo(1);
    writeFileSync(join(root, '.gen', 'queue', 'EVIL.json'), '{}');
    writeFileSync(join(root, '.gen', 'queue', 'zz.json'), '{"instruction":"<fake job>","inputs":[]}');
    const r = await cli(root, ['report', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ jobs: 1, skipped: ['queue/EVIL.json', 'queue/zz.json'] });
    expect(r.stderr).toContain(`${join(root, '.gen', 'queue', 'zz.json')}: not named by a key, so not shown`);
    expect(readdirSync(join(root, '.gen', 'report', 'jobs'))).toEqual([`${jobs[0]!.key}.html`]);
    const index = readFileSync(join(root, '.gen', 'report', 'index.html'), 'utf8');
    expect(index).toContain('2 job file(s) not shown: not named by a key');
    expect(index).not.toContain('fake job');
  });

  it("hostile: a shadow plane's receipt that is a link (a branch can commit .gen/shadow/) shows on its row, the report is written", async () => {
    const { root, jobs } = fixtureRepo(2);
    const dir = join(root, '.gen', 'shadow', 'p', 'results', jobs[0]!.key);
    mkdirSync(dir, { recursive: true });
    symlinkSync('/etc/passwd', join(dir, 'receipt.json'));
    const r = await cli(root, ['report', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ jobs: 2 });
    const page = readFileSync(join(root, '.gen', 'report', 'jobs', `${jobs[0]!.key}.html`), 'utf8');
    expect(page).toContain('unreadable');
    expect(page).not.toContain('root:x:0');
  });

  it('refuses a repository without .gen/ with exit 2, creating nothing', async () => {
    const root = join(tempDir('genjob-report-none-'), 'repo');
    mkdirSync(join(root, '.git'), { recursive: true });
    const r = await cli(root, ['report']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/no \.gen\/ here/);
    expect(existsSync(join(root, '.gen'))).toBe(false);
  });

  it('refuses an --out whose index.html genjob did not write (EGJ_REPORT_DIR, exit 2)', async () => {
    const { root } = fixtureRepo(1);
    const out = join(root, '..', 'site');
    mkdirSync(out);
    writeFileSync(join(out, 'index.html'), '<h1>my site</h1>\n');
    const r = await cli(root, ['report', '--out', out]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(
      `genjob: EGJ_REPORT_DIR: ${join(out, 'index.html')}: not a page of a genjob report; choose another --out (a report never overwrites other files)\n`,
    );
    expect(readFileSync(join(out, 'index.html'), 'utf8')).toBe('<h1>my site</h1>\n');
  });

  it('refuses a jobs/ or logs/ that is a symbolic link (EGJ_REPORT_DIR, exit 2), writing and removing nothing where it points', async () => {
    for (const sub of ['jobs', 'logs']) {
      const { root } = fixtureRepo(2);
      const victim = tempDir('genjob-report-victim-');
      // a file of the user's named like a page the report would prune
      const theirs = `${'ab'.repeat(32)}.html`;
      writeFileSync(join(victim, theirs), 'not a page of a report\n');
      mkdirSync(join(root, '.gen', 'report'), { recursive: true });
      symlinkSync(victim, join(root, '.gen', 'report', sub));
      const r = await cli(root, ['report']);
      expect(r.exitCode, sub).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^genjob: EGJ_REPORT_DIR: ${join(root, '.gen', 'report', sub)}: `));
      expect(readdirSync(victim)).toEqual([theirs]);
    }
  });

  it('refuses a default .gen/report that is a symbolic link (a branch can commit one), writing nothing where it points', async () => {
    const { root } = fixtureRepo(1);
    const victim = tempDir('genjob-report-victim-');
    symlinkSync(victim, join(root, '.gen', 'report'));
    const r = await cli(root, ['report']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^genjob: EGJ_REPORT_DIR: ${join(root, '.gen', 'report')}: `));
    expect(readdirSync(victim)).toEqual([]);
  });

  it('ends with EGJ_IO (exit 5) naming a page it cannot write, and leaves no temp file', async () => {
    const { root, jobs } = fixtureRepo(2);
    const blocked = join(root, '.gen', 'report', 'jobs', `${jobs[0]!.key}.html`);
    mkdirSync(join(blocked, 'in-the-way'), { recursive: true });
    const r = await cli(root, ['report']);
    expect(r.exitCode).toBe(5);
    expect(r.stderr).toMatch(new RegExp(`^genjob: EGJ_IO: ${blocked}: write failed: `));
    expect(readdirSync(join(root, '.gen', 'report', 'jobs')).filter((n) => n.startsWith('.tmp-'))).toEqual(
      [],
    );
    expect(existsSync(join(root, '.gen', 'report', 'index.html'))).toBe(false);
  });

  it('ships its stylesheet and script in the package (dist/report-assets/)', async () => {
    const r = await execa('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PKG });
    const files = (JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map(
      (f) => f.path,
    );
    expect(files).toEqual(
      expect.arrayContaining(['dist/report-assets/report.css', 'dist/report-assets/report.js']),
    );
  });
});
