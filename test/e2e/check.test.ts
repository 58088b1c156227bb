// genjob check end to end through the built CLI, on a committed repository with a real unittest suite:
// a good change passes and a bad one fails (records written, exit codes), apply --require-check refuses
// without a current pass and names the record in its commit, a changed checker command or pinned
// lockfile makes the record stale, so does a retry (a new receipt), a command that fails then passes
// ends flaky and is refused, setup runs once and is reused read-only, and kill -9 mid-check leaves no
// record behind.
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { liveProcesses } from '../helpers/processes.js';
import { CALC_BAD, CALC_GOOD, checkRepo, checkResults, factsOf, records, UNITTEST } from './check-helpers.js';
import { CLI } from './helpers.js';

const SWAP_PRELOAD = join(import.meta.dirname, '../helpers/config-swap-preload.cjs');

describe('genjob check: a real test suite', () => {
  it('passes a good change and fails a bad one, one record each, exit 0 and 3', async () => {
    const r = await checkRepo();
    const good = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const bad = await r.generate('Break add', { 'calc.py': CALC_BAD });

    const ok = await r.genjob(['check', good]);
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(
      new RegExp(`^${good.slice(0, 12)}  tests  pass       ✓  \\d+\\.\\ds  record [0-9a-f]{12}\\n$`),
    );
    const [goodRecord] = records(r.repo, good, 'tests');
    expect(records(r.repo, good, 'tests')).toHaveLength(1);
    const facts = factsOf(r.repo, good, 'tests', goodRecord!);
    expect(facts).toMatchObject({
      verdict: 'pass',
      marks: '✓',
      sequence: 1,
      previous: null,
      kind: 'command',
    });
    expect(facts.base_tree).toBe(await r.git(['rev-parse', 'HEAD^{tree}']));
    expect(facts.result_tree).not.toBe(facts.base_tree);

    const red = await r.genjob(['check', bad]);
    expect(red.exitCode).toBe(3);
    expect(red.stdout).toMatch(/ {2}tests {2}fail {7}✗ /);
    // the log's last lines say why: the assertion unittest printed
    expect(red.stdout).toMatch(/\| AssertionError: -1 != 5/);
    const [badRecord] = records(r.repo, bad, 'tests');
    const badFacts = factsOf(r.repo, bad, 'tests', badRecord!);
    expect(badFacts).toMatchObject({ verdict: 'fail', marks: '✗' });
    const attempt = (badFacts.attempts as Array<Record<string, unknown>>)[0]!;
    expect(attempt).toMatchObject({ n: 1, outcome: 'fail', exit_code: 1, timed_out: false });
    // the log is kept by its sha256
    const log = readFileSync(join(r.repo, '.gen', 'objects', attempt.log_sha256 as string), 'utf8');
    expect(log).toMatch(/FAILED \(failures=1\)/);

    // a current record answers: nothing runs again, the same record is named
    const again = await r.genjob(['check', '--json', good, bad]);
    expect(again.exitCode).toBe(3);
    expect(checkResults(again).map((x) => [x.verdict, x.ran, x.record])).toEqual([
      ['pass', false, goodRecord!.slice(0, 64)],
      ['fail', false, badRecord!.slice(0, 64)],
    ]);
    // the repository itself is left as it was: no new object, nothing in the work tree
    expect(await r.git(['status', '--porcelain'])).toBe('');
  });

  it('apply --require-check refuses without a current pass, and commits the pass with a Genjob-Check trailer', async () => {
    const r = await checkRepo();
    const good = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const bad = await r.generate('Break add', { 'calc.py': CALC_BAD });

    const before = await r.genjob(['apply', good, '--require-check', 'tests']);
    expect(before.exitCode).toBe(3);
    expect(before.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_CHECK_MISSING: job ${good.slice(0, 12)}: no check record for tests; run genjob check`,
      ),
    );
    expect(await r.genjob(['check', bad])).toMatchObject({ exitCode: 3 });
    const refused = await r.genjob(['apply', bad, '--require-check', 'tests']);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toMatch(
      /EGJ_CHECK_FAILED: job [0-9a-f]{12}: tests: record [0-9a-f]{12} is fail \(✗\)/,
    );
    expect(readFileSync(join(r.repo, 'calc.py'), 'utf8')).not.toBe(CALC_BAD);

    expect(await r.genjob(['check', good])).toMatchObject({ exitCode: 0 });
    const [record] = records(r.repo, good, 'tests');
    const applied = await r.genjob(['apply', good, '--require-check', 'tests', '--commit']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(readFileSync(join(r.repo, 'calc.py'), 'utf8')).toBe(CALC_GOOD);
    const message = await r.git(['log', '-1', '--format=%B']);
    expect(message).toContain(`Genjob-Check: tests sha256:${record!.slice(0, 64)}`);
    // the commit holds exactly the tree the check ran on
    expect(await r.git(['rev-parse', 'HEAD^{tree}'])).toBe(
      factsOf(r.repo, good, 'tests', record!).result_tree,
    );
    // HEAD moved: the record is no longer current
    const status = JSON.parse((await r.genjob(['status', '--json'])).stdout);
    const row = status.jobs.find((j: { key: string }) => j.key === good);
    expect(row.checks).toEqual([
      {
        checker: 'tests',
        verdict: 'pass',
        current: false,
        stale: 'base',
        recordDigest: record!.slice(0, 64),
        marks: '✓',
        signer: null,
        resultTree: expect.any(String),
      },
    ]);
  });

  it('status and show say each job’s verdict and whether it is current; status --check filters', async () => {
    const r = await checkRepo();
    const good = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const bad = await r.generate('Break add', { 'calc.py': CALC_BAD });
    await r.genjob(['check', good, bad]);
    const status = await r.genjob(['status', '--color', 'never']);
    expect(status.stdout).toMatch(/RECEIPT {3}HOST {3}CHECKS {6}INSTRUCTION/);
    expect(status.stdout).toContain(`${good.slice(0, 12)}  received      1`);
    expect(status.stdout).toMatch(/tests=pass {2}Document add/);
    expect(status.stdout).toMatch(/tests=fail {2}Break add/);
    const failing = JSON.parse((await r.genjob(['status', '--json', '--check', 'tests=fail'])).stdout);
    expect(failing.jobs.map((j: { key: string }) => j.key)).toEqual([bad]);
    const bad2 = await r.genjob(['status', '--check', 'tests']);
    expect(bad2.exitCode).toBe(2);
    const show = await r.genjob(['show', bad]);
    expect(show.stdout).toMatch(/^checks {4}tests: fail ✗, current, record [0-9a-f]{12} of \d{4}-/m);
    const shown = JSON.parse((await r.genjob(['show', '--json', bad])).stdout);
    expect(shown.checks[0]).toMatchObject({ checker: 'tests', verdict: 'fail', current: true });
  });
});

describe('genjob check: what makes a record stale', () => {
  it('an edited checker command: stale (binding), apply refuses, a new check makes a new record', async () => {
    const r = await checkRepo();
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    expect(await r.genjob(['check', key])).toMatchObject({ exitCode: 0 });
    const listed = JSON.parse((await r.genjob(['check', '--list', '--json'])).stdout).checkers[0];
    r.checkers({ tests: { run: `${UNITTEST} -v` } });
    const relisted = JSON.parse((await r.genjob(['check', '--list', '--json'])).stdout).checkers[0];
    expect(relisted.binding_sha256).not.toBe(listed.binding_sha256);
    const refused = await r.genjob(['apply', key, '--require-check', 'tests']);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toMatch(/EGJ_CHECK_STALE: .*is stale \(the checker changed/);
    const rerun = await r.genjob(['check', '--json', key]);
    expect(checkResults(rerun)[0]).toMatchObject({ verdict: 'pass', ran: true });
    const names = records(r.repo, key, 'tests');
    expect(names).toHaveLength(2);
    expect(names.map((n) => factsOf(r.repo, key, 'tests', n).sequence).sort()).toEqual([1, 2]);
    expect(await r.genjob(['apply', key, '--require-check', 'tests'])).toMatchObject({ exitCode: 0 });
  });

  it('records the binding of the checker it ran, though genjob.config.json changes while it runs', async () => {
    const r = await checkRepo();
    const key = await r.generate('Break add', { 'calc.py': CALC_BAD });
    const real = readFileSync(join(r.repo, 'genjob.config.json'), 'utf8');
    // the working tree's config as check first reads it: a `tests` that passes whatever the code does;
    // right after that read, the file is back to the real suite (test/helpers/config-swap-preload.cjs)
    r.checkers({ tests: { run: 'true' } });
    const run = await r.genjob(['check', '--json', key], {
      env: { NODE_OPTIONS: `--require ${SWAP_PRELOAD}`, GENJOB_SWAP_CONFIG: real },
    });
    expect(checkResults(run)[0], run.stderr).toMatchObject({ verdict: 'pass' });
    // the pass of `true` is bound to `true`, so under the real suite it is stale, never a pass
    const gate = await r.genjob(['apply', key, '--require-check', 'tests', '--dry-run']);
    expect(gate.exitCode).toBe(3);
    expect(gate.stderr).toMatch(/EGJ_CHECK_STALE: .*is stale \(the checker changed/);
  });

  it('a committed change to a pinned lockfile: stale (binding); an unrelated commit: stale (base)', async () => {
    const r = await checkRepo(
      { tests: { run: UNITTEST } },
      { 'poetry.lock': 'pkg==1.0\n', 'NOTES.md': 'a\n' },
    );
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    expect(await r.genjob(['check', key])).toMatchObject({ exitCode: 0 });
    const state = async () =>
      JSON.parse((await r.genjob(['show', '--json', key])).stdout).checks[0] as Record<string, unknown>;
    expect(await state()).toMatchObject({ verdict: 'pass', current: true });
    r.write('NOTES.md', 'b\n');
    await r.git(['commit', '-qam', 'notes']);
    expect(await state()).toMatchObject({ current: false, stale: 'base' });
    expect(await r.genjob(['check', key])).toMatchObject({ exitCode: 0 });
    expect(await state()).toMatchObject({ current: true });
    r.write('poetry.lock', 'pkg==2.0\n');
    await r.git(['commit', '-qam', 'bump pkg']);
    expect(await state()).toMatchObject({ current: false, stale: 'binding' });
    const refused = await r.genjob(['apply', key, '--require-check', 'tests']);
    expect(refused.stderr).toMatch(/EGJ_CHECK_STALE/);
  });

  it('retry of a received ok job gives a new receipt, and the record of the old one is stale', async () => {
    const r = await checkRepo();
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    expect(await r.genjob(['check', key])).toMatchObject({ exitCode: 0 });
    const retried = await r.genjob(['retry', key]);
    expect(retried.exitCode, retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(/its ok receipt of epoch 1 is kept in dead\//);
    const gen = readdirSync(join(r.base, 'bin')).find((n) => n.startsWith(`gen-${key.slice(0, 12)}`))!;
    const work = await r.genjob([
      'work',
      '--once',
      '--quiet',
      '--generator',
      `node ${join(r.base, 'bin', gen)}`,
    ]);
    expect(work.exitCode, work.stderr).toBe(0);
    expect(JSON.parse((await r.genjob(['verify', '--json', key])).stdout).verified[0].epoch).toBe(2);
    const shown = JSON.parse((await r.genjob(['show', '--json', key])).stdout).checks[0];
    expect(shown).toMatchObject({ verdict: 'pass', current: false, stale: 'receipt' });
    const refused = await r.genjob(['apply', key, '--require-check', 'tests']);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toMatch(/EGJ_CHECK_STALE: .*the job has another receipt now/);
  });

  it('forged: a stale record a branch commits with the highest sequence a record may hold never stops the next check', async () => {
    const r = await checkRepo();
    const key = await r.generate('Break add', { 'calc.py': CALC_BAD });
    expect(await r.genjob(['check', key])).toMatchObject({ exitCode: 3 });
    // the same record as an older receipt's, numbered 2^53 - 1: a job's key is known before it is minted
    const dir = join(r.repo, '.gen', 'checks', key, 'tests');
    const [name] = records(r.repo, key, 'tests');
    const doc = JSON.parse(readFileSync(join(dir, name!), 'utf8'));
    Object.assign(doc.predicate.genjob, {
      sequence: Number.MAX_SAFE_INTEGER,
      receipt_sha256: 'f'.repeat(64),
    });
    const forged = canonicalBytes(doc);
    writeFileSync(join(dir, `${sha256Hex(forged)}.json`), forged);
    const again = await r.genjob(['check', '--json', '--recheck', key]);
    expect(again.stderr).toBe('');
    expect(checkResults(again)[0]).toMatchObject({ verdict: 'fail', marks: '✗✗', ran: true });
    const shown = JSON.parse((await r.genjob(['show', '--json', key])).stdout).checks[0];
    expect(shown).toMatchObject({ verdict: 'fail', marks: '✗✗', current: true });
  });

  it('forged: a record directory a branch commits as a symbolic link is refused, and nothing is written where it points', async () => {
    const r = await checkRepo();
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    mkdirSync(join(r.repo, '.gen', 'checks', key), { recursive: true });
    symlinkSync(r.outside, join(r.repo, '.gen', 'checks', key, 'tests'));
    const run = await r.genjob(['check', '--json', key]);
    expect(run.exitCode).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: false,
      code: 'EGJ_BAD_PATH',
      failed: [{ key, checker: 'tests', code: 'EGJ_BAD_PATH' }],
    });
    expect(run.stderr).toMatch(/EGJ_BAD_PATH: .*tests: a symbolic link; check writes only inside/);
    expect(readdirSync(r.outside)).toEqual([]);
  });
});

describe('genjob check: flaky, setup, a killed check', () => {
  it('a command that fails, then passes, ends flaky (✗✓) and is refused unless --allow-flaky', async () => {
    const r = await checkRepo({ tests: { run: 'test "$GENJOB_CHECK_ATTEMPT" -ge 2' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const first = await r.genjob(['check', '--json', key]);
    expect(first.exitCode).toBe(3);
    expect(checkResults(first)[0]).toMatchObject({ verdict: 'fail', marks: '✗' });
    // a failure carries the code and message every failure has, besides each entry's
    expect(JSON.parse(first.stdout)).toMatchObject({
      ok: false,
      code: 'EGJ_CHECK_FAILED',
      message: '1 of 1 check(s) did not pass',
    });
    // re-running until green: the new record holds both attempts, and green after red is flaky
    const recheck = await r.genjob(['check', '--json', '--recheck', key]);
    expect(recheck.exitCode).toBe(3);
    expect(checkResults(recheck)[0]).toMatchObject({ verdict: 'flaky', marks: '✗✓', attempts: 2, ran: true });
    expect(JSON.parse(recheck.stdout)).toMatchObject({ code: 'EGJ_CHECK_FLAKY' });
    const refused = await r.genjob(['apply', key, '--require-check', 'tests']);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toMatch(
      /EGJ_CHECK_FLAKY: .*is flaky \(✗✓: its attempts disagree\); --allow-flaky accepts it/,
    );
    expect(await r.genjob(['apply', key, '--require-check', 'tests', '--allow-flaky'])).toMatchObject({
      exitCode: 0,
    });
  });

  it('--attempts N stops at the first pass; attempts that disagree in one run are flaky too', async () => {
    const r = await checkRepo({ tests: { run: 'test "$GENJOB_CHECK_ATTEMPT" -ge 2' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', '--json', '--attempts', '3', key]);
    expect(checkResults(run)[0]).toMatchObject({ verdict: 'flaky', marks: '✗✓', attempts: 2 });
  });

  it('a timeout is a fail', async () => {
    const r = await checkRepo({ tests: { run: 'sleep 5', timeout: 1 } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', key]);
    expect(run.exitCode).toBe(3);
    expect(run.stdout).toMatch(/tests {2}fail {7}✗ .*\n {4}\| \(timed out after 1 s\)/);
  });

  it('setup runs once per set of inputs; its result is reused read-only; a failing setup is an error, never a fail', async () => {
    const setup = 'mkdir -p deps && echo one > deps/lib.txt && echo ran >> deps/runs';
    const r = await checkRepo(
      {
        tests: {
          setup,
          // reads the setup's result, and tries to change it: the write must fail
          run: 'grep -q one deps/lib.txt && ! (echo two > deps/lib.txt) 2>/dev/null',
        },
      },
      { 'poetry.lock': 'a\n' },
    );
    const one = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const two = await r.generate('Document add, again', { 'calc.py': `${CALC_GOOD}\n` });
    const run = await r.genjob(['check', '--json', one, two]);
    expect(run.exitCode, run.stdout).toBe(0);
    const setups = readdirSync(join(r.repo, '.gen', 'check-setup'));
    expect(setups).toHaveLength(1);
    expect(
      readFileSync(join(r.repo, '.gen', 'check-setup', setups[0]!, 'tree', 'deps', 'runs'), 'utf8'),
    ).toBe('ran\n');
    const facts = (k: string) => factsOf(r.repo, k, 'tests', records(r.repo, k, 'tests')[0]!);
    expect((facts(one).setup as { cached: boolean }).cached).toBe(false);
    expect((facts(two).setup as { cached: boolean }).cached).toBe(true);

    r.checkers({ tests: { setup: 'exit 7', run: 'true' } });
    const broken = await r.genjob(['check', '--json', one]);
    expect(broken.exitCode).toBe(3);
    expect(checkResults(broken)[0]).toMatchObject({ verdict: 'error', marks: '!!' });
    const refused = await r.genjob(['apply', one, '--require-check', 'tests']);
    expect(refused.stderr).toMatch(
      /EGJ_CHECK_MISSING: .*is an error \(the checker could not run: no verdict\)/,
    );
  });

  it('kill -9 mid-check leaves no record, ends the checker, and the next check runs', async () => {
    const marker = 'sleep 7.321';
    const r = await checkRepo({ tests: { run: `echo started; ${marker}; true` } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const child = execa(process.execPath, [CLI, 'check', key], {
      cwd: r.repo,
      env: { ...r.env, GENJOB_GENERATOR_BIND: '' },
      reject: false,
    });
    const staging = join(r.repo, '.gen', 'staging');
    const started = () =>
      readdirSync(staging).some((d) => {
        const log = join(staging, d, 'checkers', 'tests', 'logs', 'run-1.log');
        return existsSync(log) && readFileSync(log, 'utf8').includes('started');
      });
    // waits however slow the machine (the test's guard ends a wait for ever)
    while (!(existsSync(staging) && started())) await new Promise((res) => setTimeout(res, 50));
    expect(started()).toBe(true);
    child.kill('SIGKILL');
    await child;
    expect(records(r.repo, key, 'tests')).toEqual([]);
    // bwrap dies with its parent, and the checker with it
    while (liveProcesses(marker.split(' ')).length > 0) await new Promise((res) => setTimeout(res, 50));
    expect(liveProcesses(marker.split(' '))).toEqual([]);

    r.checkers({ tests: { run: 'echo started; true' } });
    const next = await r.genjob(['check', key]);
    expect(next.exitCode, next.stderr).toBe(0);
    expect(records(r.repo, key, 'tests')).toHaveLength(1);
    // the dead check's scratch directory was swept
    expect(readdirSync(staging)).toEqual([]);
  });
});

describe('genjob check: usage', () => {
  it('check --list prints each checker with its binding digest; an unknown --checker is exit 2', async () => {
    const r = await checkRepo({ tests: { run: UNITTEST }, lint: { run: 'true', attempts: 2 } });
    const list = await r.genjob(['check', '--list']);
    expect(list.exitCode).toBe(0);
    expect(list.stdout).toMatch(
      /^lint {3}command {2}sha256:[0-9a-f]{64} {2}true\ntests {2}command {2}sha256:[0-9a-f]{64} {2}python3 -m unittest discover -s tests\n$/,
    );
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const unknown = await r.genjob(['check', key, '--checker', 'typo']);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(
      /^genjob: EGJ_CHECKER_UNKNOWN: --checker typo: genjob.config.json declares no such checker \(it declares lint, tests\)/,
    );
  });

  it('apply --require-check and status --check of a checker the config does not declare: exit 2 up front, nothing written', async () => {
    const r = await checkRepo();
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const before = readFileSync(join(r.repo, 'calc.py'), 'utf8');
    const apply = await r.genjob(['apply', key, '--require-check', 'test']);
    expect(apply.exitCode).toBe(2);
    expect(apply.stderr).toBe(
      'genjob: EGJ_CHECKER_UNKNOWN: --require-check test: genjob.config.json declares no such checker (it declares tests)\n',
    );
    expect(readFileSync(join(r.repo, 'calc.py'), 'utf8')).toBe(before);
    const status = await r.genjob(['status', '--check', 'test=pass']);
    expect(status.exitCode).toBe(2);
    expect(status.stderr).toBe(
      'genjob: EGJ_CHECKER_UNKNOWN: --check test: genjob.config.json declares no such checker (it declares tests)\n',
    );
  });

  it('--concurrency 2: two checkers of two jobs at once, each on its own copy of its own tree', async () => {
    const r = await checkRepo({
      tests: { run: UNITTEST },
      // a checker that changes its copy: the other checker, running beside it, never sees that
      scribble: { run: 'echo scribbled > calc.py; sleep 0.3; grep -q scribbled calc.py' },
    });
    const good = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const bad = await r.generate('Break add', { 'calc.py': CALC_BAD });
    const run = await r.genjob(['check', '--json', '--concurrency', '2', good, bad]);
    expect(run.exitCode).toBe(3);
    const verdicts = checkResults(run).map((x) => [
      (x.key as string) === good ? 'good' : 'bad',
      x.checker,
      x.verdict,
    ]);
    expect(verdicts).toEqual([
      ['good', 'scribble', 'pass'],
      ['good', 'tests', 'pass'],
      ['bad', 'scribble', 'pass'],
      ['bad', 'tests', 'fail'],
    ]);
  });

  it('each attempt and each checker of a job gets a fresh copy: what one leaves (in the first copy, checked out with the tree) never reaches the next', async () => {
    // exit 7 when a file left by an earlier run is there; otherwise leave one and fail (exit 1)
    const leave =
      '[ -e leftover ] && exit 7; [ -e calc.py ] || exit 8; echo left > leftover; rm calc.py; exit 1';
    const r = await checkRepo({ first: { run: leave }, second: { run: leave } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', '--json', '--attempts', '2', key]);
    expect(run.exitCode, run.stderr).toBe(3);
    for (const c of ['first', 'second']) {
      const facts = factsOf(r.repo, key, c, records(r.repo, key, c)[0]!);
      const attempts = facts.attempts as Array<{ exit_code: number | null }>;
      expect(
        attempts.map((a) => a.exit_code),
        c,
      ).toEqual([1, 1]);
    }
    expect(readdirSync(join(r.repo, '.gen', 'staging')).filter((n) => n.startsWith('.check-'))).toEqual([]);
  });

  it('--no-sandbox runs the checker unconfined and the record says so', async () => {
    const r = await checkRepo({ tests: { run: 'test -d "$HOME"' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    expect((await r.genjob(['check', key, '--no-sandbox'])).exitCode).toBe(0);
    expect(factsOf(r.repo, key, 'tests', records(r.repo, key, 'tests')[0]!).sandbox).toEqual({
      kind: 'none',
      network: true,
    });
  });

  it('a malformed checker is EGJ_CONFIG naming the file and the key', async () => {
    const r = await checkRepo({ tests: { run: UNITTEST, atempts: 2 } });
    const list = await r.genjob(['check', '--list']);
    expect(list.exitCode).toBe(2);
    expect(list.stderr).toMatch(/EGJ_CONFIG: .*genjob.config.json: "checkers.tests": unknown key "atempts"/);
  });

  it('checks HEAD plus the outputs: an output keeps the executable mode HEAD gives its file', async () => {
    const r = await checkRepo(
      { tests: { run: 'test -x run.sh && ./run.sh' } },
      { 'run.sh': '#!/bin/sh\nexit 1\n' },
    );
    chmodSync(join(r.repo, 'run.sh'), 0o755);
    await r.git(['commit', '-qam', 'run.sh is executable']);
    const key = await r.generate('Make run.sh pass', { 'run.sh': '#!/bin/sh\nexit 0\n' });
    const run = await r.genjob(['check', key, '--json']);
    expect(run.exitCode, run.stderr + run.stdout).toBe(0);
    expect(checkResults(run)).toMatchObject([{ verdict: 'pass' }]);
  });

  it('checks every job on the HEAD it started from, though a commit lands while it runs', async () => {
    const r = await checkRepo();
    const first = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const second = await r.generate('Break add', { 'calc.py': CALC_BAD });
    // a checker (unconfined, with the user's rights, so it reaches the repository) that commits a change
    // of the tree each time
    const repo = JSON.stringify(r.repo);
    r.checkers({
      tests: {
        run: `date +%s%N > ${repo}/moved.txt && git -C ${repo} add moved.txt && git -C ${repo} -c user.name=t -c user.email=t@t commit -qm moved`,
      },
    });
    await r.git(['commit', '-qam', 'a checker that commits']);
    const started = await r.git(['rev-parse', 'HEAD^{tree}']);
    // run as root, an unconfined checker is still the sandbox user (nobody) unless root is asked for
    const asUser = process.getuid?.() === 0 ? ['--sandbox-user', 'root'] : [];
    const run = await r.genjob(['check', '--no-sandbox', ...asUser, '--json', first, second]);
    expect(run.exitCode, run.stderr + run.stdout).toBe(0);
    expect(await r.git(['rev-list', '--count', 'HEAD'])).toBe('4');
    // both records name the tree the command started on: the second job was not checked on a HEAD
    // that moved under it (its binding digest is of the tree it names)
    for (const key of [first, second]) {
      const facts = factsOf(r.repo, key, 'tests', records(r.repo, key, 'tests')[0]!);
      expect(facts.base_tree, key.slice(0, 12)).toBe(started);
    }
  });

  it('without bubblewrap: EGJ_SANDBOX_UNAVAILABLE (exit 2) naming the package, nothing run', async () => {
    const r = await checkRepo();
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    // git on the PATH, bwrap not
    const bin = join(r.base, 'git-only');
    mkdirSync(bin);
    symlinkSync((await execa('sh', ['-c', 'command -v git'])).stdout, join(bin, 'git'));
    const run = await r.genjob(['check', key], { env: { PATH: bin } });
    expect(run.exitCode, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /^genjob: EGJ_SANDBOX_UNAVAILABLE: genjob check: bwrap is not installed; install the Debian package bubblewrap /,
    );
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(records(r.repo, key, 'tests')).toEqual([]);
  });

  it('a bubblewrap that cannot start a sandbox: EGJ_SANDBOX_UNAVAILABLE (exit 2) once its run failed, no record, nothing left', async () => {
    const r = await checkRepo({ tests: { run: 'touch ran-unconfined' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    // bwrap is found on the PATH (the probe is not asked first), but refuses to make its namespaces, as in
    // a container that forbids them: the run does not start, the probe is asked then, and says why
    const bin = join(r.base, 'no-userns');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'bwrap'),
      '#!/bin/sh\necho "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n',
    );
    chmodSync(join(bin, 'bwrap'), 0o755);
    const run = await r.genjob(['check', key], { env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(run.exitCode, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /^genjob: EGJ_SANDBOX_UNAVAILABLE: genjob check: bwrap cannot start a sandbox \(exit 1: bwrap: No permissions to create new namespace.*may not create the user namespace/,
    );
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(records(r.repo, key, 'tests')).toEqual([]);
    expect(readdirSync(join(r.repo, '.gen', 'staging')).filter((n) => n.startsWith('.check-'))).toEqual([]);
    expect(existsSync(join(r.repo, 'ran-unconfined'))).toBe(false);
  });

  it('a branch without a commit yet is EGJ_CHECK_NO_HEAD (exit 2), nothing run', async () => {
    const r = await checkRepo();
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    await r.git(['checkout', '-q', '--orphan', 'fresh']);
    const run = await r.genjob(['check', key]);
    expect(run.exitCode, run.stderr).toBe(2);
    expect(run.stderr).toContain('EGJ_CHECK_NO_HEAD');
    expect(run.stderr).toContain("no commit at HEAD; a check runs on HEAD's tracked files, so commit first");
    expect(records(r.repo, key, 'tests')).toEqual([]);
  });

  it('HEAD without the job’s inputs is exit 4 (stale against HEAD), nothing run, told once for all its checkers', async () => {
    const r = await checkRepo();
    r.checkers({ tests: { run: UNITTEST }, lint: { run: 'true' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    r.write('calc.py', 'def add(a, b):\n    return b + a\n');
    await r.git(['commit', '-qam', 'someone else changed calc.py']);
    const run = await r.genjob(['check', key]);
    expect(run.exitCode).toBe(4);
    expect(run.stderr).toMatch(
      /^genjob: EGJ_STALE: calc.py: HEAD holds sha256 [0-9a-f]{12}, the job [0-9a-f]{12} was minted on sha256 [0-9a-f]{12}; check it on the commit it was minted on, or mint it again from HEAD\n$/,
    );
    expect(run.stdout).toContain('2 of 2 check(s) did not pass');
    expect(records(r.repo, key, 'tests')).toEqual([]);
  });
});
