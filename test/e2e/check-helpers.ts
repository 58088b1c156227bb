// Helpers for the end-to-end tests of `genjob check`: a committed git repository holding a tiny Python
// module with a real unittest suite and a genjob.config.json declaring its checkers, a generator script
// that writes chosen bytes, and a runner for the built CLI. The generator runs confined like any other
// (the temp dir is exposed to it), so a job's receipt is as real as `work` makes it.
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { tempDir } from '../helpers/temp-store.js';
import { type CliResult, runCli } from './helpers.js';

export const CALC = 'def add(a, b):\n    return a + b\n';
export const CALC_GOOD = 'def add(a, b):\n    """The sum of a and b."""\n    return a + b\n';
export const CALC_BAD = 'def add(a, b):\n    return a - b\n';
export const TEST_CALC = [
  'import unittest',
  '',
  'from calc import add',
  '',
  '',
  'class AddTest(unittest.TestCase):',
  '    def test_adds(self):',
  '        self.assertEqual(add(2, 3), 5)',
  '',
].join('\n');
export const UNITTEST = 'python3 -m unittest discover -s tests';

export interface CheckRepo {
  base: string;
  repo: string;
  /** A directory outside the repository (keys, a place a hostile check must not reach). */
  outside: string;
  env: Record<string, string>;
  genjob(args: readonly string[], opts?: { env?: Record<string, string>; cwd?: string }): Promise<CliResult>;
  git(args: readonly string[], cwd?: string): Promise<string>;
  /** Write (or replace) genjob.config.json's checkers. */
  checkers(checkers: Record<string, unknown>): void;
  /** Mint a job for `paths`, work it with a generator writing `files`; returns the key. */
  generate(instruction: string, files: Record<string, string>): Promise<string>;
  write(path: string, text: string): void;
}

export function gitIdentityEnv(base: string): Record<string, string> {
  const config = join(base, 'gitconfig');
  writeFileSync(
    config,
    '[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n',
  );
  return { GIT_CONFIG_GLOBAL: config, GIT_CONFIG_NOSYSTEM: '1' };
}

/** A committed repository with calc.py, its unittest suite, `extra` files and these checkers. */
export async function checkRepo(
  checkers: Record<string, unknown> = { tests: { run: UNITTEST } },
  extra: Record<string, string> = {},
  parent?: string,
): Promise<CheckRepo> {
  const base = tempDir('genjob-check-', parent);
  const repo = join(base, 'repo');
  const outside = join(base, 'outside');
  const cache = join(base, 'cache');
  for (const d of [repo, outside, cache, join(base, 'bin')]) mkdirSync(d, { recursive: true });
  // the user's own state (consent records) in the test's directory too
  const env = {
    ...gitIdentityEnv(base),
    XDG_CACHE_HOME: cache,
    XDG_STATE_HOME: join(base, 'state'),
    GENJOB_GENERATOR_BIND_RW: base,
  };
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), text);
  };
  const git = async (args: readonly string[], cwd = repo) => {
    const r = await execa('git', args, { cwd, env, reject: false });
    if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    return String(r.stdout);
  };
  const setCheckers = (c: Record<string, unknown>) =>
    write('genjob.config.json', `${JSON.stringify({ checkers: c }, null, 2)}\n`);
  write('calc.py', CALC);
  write('tests/test_calc.py', TEST_CALC);
  write('.gitignore', '.gen/\n__pycache__/\n');
  setCheckers(checkers);
  for (const [p, t] of Object.entries(extra)) write(p, t);
  await git(['init', '-q', '-b', 'main']);
  await git(['add', '-A']);
  await git(['commit', '-qm', 'calc and its test']);
  const r: CheckRepo = {
    base,
    repo,
    outside,
    env,
    genjob: (args, o = {}) => runCli(args, { cwd: o.cwd ?? repo, env: { ...env, ...o.env } }),
    git,
    checkers: setCheckers,
    write,
    generate: async (instruction, files) => {
      const paths = Object.keys(files);
      const minted = await r.genjob(['mint', '--json', '-m', instruction, ...paths]);
      if (minted.exitCode !== 0) throw new Error(`mint: ${minted.stderr}`);
      const key = (JSON.parse(minted.stdout) as { key: string }).key;
      const data = join(base, 'bin', `${key}.json`);
      writeFileSync(data, JSON.stringify(files));
      const gen = join(base, 'bin', `gen-${key.slice(0, 12)}.mjs`);
      writeFileSync(
        gen,
        `import { readFileSync, writeFileSync } from 'node:fs';\nfor (const [p, t] of Object.entries(JSON.parse(readFileSync(${JSON.stringify(data)}, 'utf8')))) writeFileSync(p, t);\n`,
      );
      chmodSync(gen, 0o644);
      const work = await r.genjob(['work', '--once', '--quiet', '--generator', `node ${gen}`]);
      if (work.exitCode !== 0) throw new Error(`work: ${work.stderr}`);
      return key;
    },
  };
  return r;
}

/** The record files of one job and checker (names are their sha256). */
export function records(repo: string, key: string, checker: string): string[] {
  try {
    return readdirSync(join(repo, '.gen', 'checks', key, checker))
      .filter((n) => n.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
}

/** The genjob facts of a record file (plain or enveloped). */
export function factsOf(repo: string, key: string, checker: string, name: string): Record<string, unknown> {
  const doc = JSON.parse(readFileSync(join(repo, '.gen', 'checks', key, checker, name), 'utf8'));
  const statement = doc.payloadType ? JSON.parse(Buffer.from(doc.payload, 'base64').toString('utf8')) : doc;
  return statement.predicate.genjob;
}

/** `check --json`'s results. */
export function checkResults(r: CliResult): Array<Record<string, unknown>> {
  return (JSON.parse(r.stdout) as { results: Array<Record<string, unknown>> }).results;
}
