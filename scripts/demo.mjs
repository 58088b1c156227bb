#!/usr/bin/env node
// The end-to-end demo (`npm run demo`, which builds first): copy fixtures/toy-repo to a fresh temp
// dir, make it a git repository (its tests declared as a checker), then run mint --each (a run) →
// status → work --once → verify → check → apply --require-check tests → apply again with the
// deterministic fixtures/demo-generator.mjs, printing each command and its output, and finish with the
// diff the job made, the run gate's verdict and the run's report (its index path is the last line). No
// network, no model. Exits non-zero if a step fails.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, '..');
const cli = join(pkg, 'bin', 'genjob.js');
const generator = `node ${JSON.stringify(join(pkg, 'fixtures', 'demo-generator.mjs'))}`;
const keep = process.argv.includes('--keep');

const base = mkdtempSync(join(tmpdir(), 'genjob-demo-'));
// run as root, genjob runs generators and checkers as an unprivileged sandbox user (nobody), which must
// reach the toy repository: mkdtemp's directory is its owner's alone
if (process.getuid?.() === 0) chmodSync(base, 0o755);
const repo = join(base, 'toy-repo');
// the demo generator runs confined: the package it lives in is exposed to it read-only
const env = {
  ...process.env,
  XDG_CACHE_HOME: join(base, 'cache'),
  GIT_CONFIG_NOSYSTEM: '1',
  NO_COLOR: '1',
  GENJOB_GENERATOR_BIND: pkg,
};
mkdirSync(env.XDG_CACHE_HOME, { recursive: true });

// genjob refuses to run a generator unconfined unless told to; on a machine without bubblewrap the
// demo says so and runs with --no-sandbox rather than failing (npm test installs bubblewrap).
const confined =
  spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--die-with-parent', 'true'], {
    stdio: 'ignore',
  }).status === 0;
const sandboxFlags = confined ? [] : ['--no-sandbox'];

const quote = (a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`);

/** Run a command in the repo, print it and its output; throw on an unexpected exit status. */
function step(cmd, args, { show = true, expect = 0 } = {}) {
  const shown = cmd === process.execPath ? ['genjob', ...args.slice(1)] : [cmd, ...args];
  if (show) process.stdout.write(`\n$ ${shown.map(quote).join(' ')}\n`);
  const r = spawnSync(cmd, args, { cwd: repo, env, encoding: 'utf8' });
  if (r.error) throw new Error(`${shown[0]}: ${r.error.message}`);
  if (show) process.stdout.write(`${r.stdout}${r.stderr}`);
  if (r.status !== expect) {
    if (!show) process.stdout.write(`${r.stdout}${r.stderr}`);
    throw new Error(`\`${shown.map(quote).join(' ')}\` exited ${r.status}, expected ${expect}`);
  }
  return r.stdout;
}

const genjob = (...args) => step(process.execPath, [cli, ...args]);
const git = (...args) =>
  step('git', ['-c', 'user.name=genjob demo', '-c', 'user.email=demo@example.invalid', ...args], {
    show: false,
  });

let failed = false;
try {
  cpSync(join(pkg, 'fixtures', 'toy-repo'), repo, { recursive: true });
  git('init', '-q');
  writeFileSync(join(repo, '.git', 'info', 'exclude'), '.gen/\n__pycache__/\n');
  // the toy repository's tests, as the checker `genjob check` runs and `apply --require-check` demands
  const checkers = { tests: { run: 'python3 tests/run_tests.py' } };
  writeFileSync(join(repo, 'genjob.config.json'), `${JSON.stringify({ checkers }, null, 2)}\n`);
  git('add', '-A');
  git('commit', '-q', '-m', 'toy repository');
  process.stdout.write(`genjob demo in ${repo}\n(generator: ${generator})\n`);

  // one job per module of src/ (and its test), sealed as the run `demo`
  const instruction = 'Add a timeout to fetch_user';
  const each = [
    'mint',
    '--each',
    'src/*.py',
    '--also',
    'tests/test_{stem}.py',
    '-m',
    instruction,
    '--run',
    'demo',
  ];
  const key = genjob(...each).split(/\s/)[0];
  if (!/^[0-9a-f]{64}$/.test(key)) throw new Error(`mint printed ${JSON.stringify(key)}, not a key`);
  genjob(...each); // the same mint again: the run is sealed, nothing is written
  genjob('status');
  if (!confined)
    process.stdout.write(
      '(bubblewrap is not usable here, so the generator runs unconfined: --no-sandbox; apt-get install bubblewrap)\n',
    );
  genjob('work', '--once', '--generator', generator, ...sandboxFlags);
  genjob('verify', key.slice(0, 12));
  genjob('check', key.slice(0, 12), ...sandboxFlags); // the tests, confined, on HEAD + the job's outputs
  genjob('apply', key.slice(0, 12), '--require-check', 'tests');
  genjob('apply', key.slice(0, 12)); // already applied: a no-op, exit 0
  genjob('status');

  process.stdout.write('\n$ git diff\n');
  process.stdout.write(git('-c', 'core.pager=cat', 'diff', '--no-color'));
  // the run's decision, counting only jobs whose tests pass
  const verdict = genjob('gate', '--run', 'demo', '--require-check', 'tests')
    .split('\n')[0]
    .replace(/ passed.*$/, '');
  // the run's review site (its jobs and the gate just closed), kept beside the (removed) demo directory so it can be opened afterwards
  const index = genjob('report', '--run', 'demo', '--out', `${base}-report`).split('\n')[0];
  process.stdout.write(
    `\ndemo ok: the job ${key.slice(0, 12)} was minted, worked, verified, checked and applied exactly once; ${verdict}\n` +
      `report: ${index}\n`,
  );
} catch (err) {
  failed = true;
  process.stderr.write(`\ndemo FAILED: ${err.message}\n`);
} finally {
  if (keep || failed) process.stdout.write(`(kept ${base} for inspection)\n`);
  else rmSync(base, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
