// Shared helpers for the end-to-end tests: each test gets a fresh temp "sandbox" holding a copy of
// fixtures/toy-repo (a git repository), its own XDG_CACHE_HOME (so the serve result cache is
// isolated) and a place for generator scripts; the built CLI is spawned with execa, never imported.
// Generators run inside the sandbox: the package is exposed read-only and the temp dir writable
// (GENJOB_GENERATOR_BIND / GENJOB_GENERATOR_BIND_RW), so scripts, logs and markers there just work.
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { tempDir } from '../helpers/temp-store.js';
import { type TreeSnapshot, snapshot as treeSnapshot } from '../helpers/tree-snapshot.js';

export const PKG = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = join(PKG, 'bin', 'genjob.js');
export const FIXTURE = join(PKG, 'fixtures', 'toy-repo');
export const DEMO_GENERATOR = `node ${JSON.stringify(join(PKG, 'fixtures', 'demo-generator.mjs'))}`;
export const TIMEOUT_INSTRUCTION = 'Add a timeout to fetch_user';

export interface Sandbox {
  /** The temp dir holding everything below; removed after the test. */
  base: string;
  /** The toy repository (a copy of fixtures/toy-repo with .git/). */
  repo: string;
  /** XDG_CACHE_HOME for every CLI this sandbox spawns. */
  cache: string;
  /** Run the built CLI: cwd defaults to the repository. */
  genjob: (
    args: readonly string[],
    opts?: { cwd?: string; env?: Record<string, string> },
  ) => Promise<CliResult>;
  /** Write an executable shell script outside the repository; returns its absolute path. */
  script: (name: string, body: string) => string;
}

export interface CliResult {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
}

/**
 * A fresh sandbox with the toy repository in it (git-initialised unless `git: false`), in `parent` (default:
 * the temp dir), removed after the test (`life: 'file'`: after the file's last test, for one tests share).
 */
export async function makeSandbox(
  opts: { git?: boolean; parent?: string; life?: 'test' | 'file' } = {},
): Promise<Sandbox> {
  const base = tempDir('genjob-e2e-', opts.parent, opts.life);
  // run as root, serve runs its generators as nobody: the sandbox's scripts and logs (exposed writable
  // to them) are theirs to write, as a host shares such a directory
  if (process.getuid?.() === 0) chmodSync(base, 0o777);
  const repo = join(base, 'repo');
  const cache = join(base, 'cache');
  mkdirSync(cache);
  mkdirSync(join(base, 'bin'));
  cpSync(FIXTURE, repo, { recursive: true });
  if (opts.git !== false) await execa('git', ['init', '-q'], { cwd: repo });
  return {
    base,
    repo,
    cache,
    genjob: (args, o = {}) =>
      runCli(args, {
        cwd: o.cwd ?? repo,
        // generators run confined: they see the sandbox's scripts and logs (writable), never its
        // cache (serve hides that even inside an exposed path)
        env: { XDG_CACHE_HOME: cache, GENJOB_GENERATOR_BIND_RW: base, ...o.env },
      }),
    script: (name, body) => {
      const file = join(base, 'bin', name);
      writeFileSync(file, `#!/bin/sh\n${body}\n`);
      chmodSync(file, 0o755);
      return file;
    },
  };
}

/** Spawn the built CLI (run `npm run build` first). XDG_CACHE_HOME must be given by the caller. */
export async function runCli(
  args: readonly string[],
  opts: { cwd: string; env: Record<string, string> },
): Promise<CliResult> {
  if (!opts.env.XDG_CACHE_HOME)
    throw new Error('runCli: set XDG_CACHE_HOME so the result cache stays isolated');
  const r = await execa(process.execPath, [CLI, ...args], {
    cwd: opts.cwd,
    // the package (fixtures/demo-generator.mjs) is readable by confined generators
    env: { GENJOB_GENERATOR_BIND: PKG, ...opts.env, GENJOB_DEBUG: '' },
    reject: false,
    stripFinalNewline: false,
  });
  return { exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** The tree under `dir`, byte for byte (see tree-snapshot.ts), minus `exclude` top-level names. */
export function snapshot(dir: string, exclude: readonly string[] = ['.gen', '.git']): TreeSnapshot {
  return treeSnapshot(dir, exclude);
}

/** Mint through the CLI (--json) and return the key; fails the test on any other exit. */
export async function mintKey(
  sb: Sandbox,
  instruction: string,
  paths: readonly string[],
  extra: readonly string[] = [],
): Promise<string> {
  const r = await sb.genjob(['mint', '--json', '-m', instruction, ...extra, ...paths]);
  if (r.exitCode !== 0) throw new Error(`mint exited ${r.exitCode}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

/** The names in a .gen/ subdirectory, sorted ([] when it does not exist). */
export function genDir(sb: Sandbox, name: string): string[] {
  try {
    return readdirSync(join(sb.repo, '.gen', name)).sort();
  } catch {
    return [];
  }
}

export function readJson<T = Record<string, unknown>>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}
