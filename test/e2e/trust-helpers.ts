// Helpers for the trust, secrets and openai end-to-end tests: a throwaway repository with its own
// cache and config directories, a runner for the built CLI (reject: false, a clean environment), and a
// byte-for-byte snapshot of a directory tree so a refused command can be shown to have written nothing.
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type Result } from 'execa';
import { readJournal } from '../../src/store/journal.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp-store.js';

// Every file, directory and symlink under a directory, byte for byte (nothing skipped by default).
export { snapshot } from '../helpers/tree-snapshot.js';

// GENJOB_E2E_BIN runs another build of the CLI (e.g. a private one while others rebuild dist/).
export const BIN =
  process.env.GENJOB_E2E_BIN ?? fileURLToPath(new URL('../../bin/genjob.js', import.meta.url));

export interface Repo {
  /** The repository root (holds .gen/). */
  root: string;
  /** Scratch space outside the repository: keys, instruction files. */
  outside: string;
  /** $XDG_CACHE_HOME of every CLI run (the local serve's result cache lives under it). */
  cache: string;
  config: string;
  /** Environment added to every run of this repository. */
  env: Record<string, string>;
}

/** A fresh repository holding `files`, with .gen/ created so the CLI finds its root; removed after the test. */
export function makeRepo(files: Record<string, string> = {}): Repo {
  const base = tempDir('genjob-e2e-');
  const root = join(base, 'repo');
  const repo: Repo = {
    root,
    outside: join(base, 'outside'),
    cache: join(base, 'cache'),
    config: join(base, 'config'),
    env: {},
  };
  for (const d of [root, join(root, '.gen'), repo.outside, repo.cache, repo.config])
    mkdirSync(d, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return repo;
}

/** The parent environment without anything genjob or an OpenAI client would read. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('GENJOB_') || k === 'OPENAI_API_KEY' || k.startsWith('XDG_'))
      continue;
    env[k] = v;
  }
  return env;
}

/** Run the built CLI in the repository root; never throws for a non-zero exit. */
export function gj(
  repo: Repo,
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string; wrap?: string[] } = {},
): Promise<Result> {
  // `wrap` runs the CLI under another program (e.g. strace injecting a fault)
  const [cmd, ...pre] = [...(opts.wrap ?? []), process.execPath, BIN];
  return execa(cmd!, [...pre, ...args], {
    cwd: opts.cwd ?? repo.root,
    reject: false,
    extendEnv: false,
    stdin: 'ignore',
    env: {
      ...cleanEnv(),
      XDG_CACHE_HOME: repo.cache,
      XDG_CONFIG_HOME: repo.config,
      ...repo.env,
      ...opts.env,
    },
  }) as unknown as Promise<Result>;
}

/** The one `genjob: EGJ_…: …` line of stderr (the error line main.ts prints). */
export function errorLine(r: Result): string {
  const lines = String(r.stderr)
    .split('\n')
    .filter((l) => /^genjob: EGJ_[A-Z_]+: /.test(l));
  return lines.join('\n');
}

/** `ed25519:<base64>` and the key id for a private key file written by `genjob keygen`. */
export function publicKeyOfFile(file: string): { publicKey: string; keyid: string } {
  const pub = createPublicKey(createPrivateKey(readFileSync(file)));
  const raw = Buffer.from(pub.export({ format: 'jwk' }).x as string, 'base64url');
  return {
    publicKey: `ed25519:${raw.toString('base64')}`,
    keyid: createHash('sha256').update(raw).digest('hex').slice(0, 16),
  };
}

export interface JournalLine {
  at: string;
  event: string;
  key?: string;
  [field: string]: unknown;
}

export function readJournalFile(repo: Repo): JournalLine[] {
  return readJournal(new Store(repo.root));
}

/** Names in a .gen/ subdirectory ([] when it does not exist). */
export function genDir(repo: Repo, name: string): string[] {
  try {
    return readdirSync(join(repo.root, '.gen', name)).sort();
  } catch {
    return [];
  }
}

/** Mint a job changing `path` ("bump PATH") and return its key; throws on any other exit. */
export async function mintBump(repo: Repo, path: string): Promise<string> {
  const r = await gj(repo, ['mint', '-m', `bump ${path}`, path]);
  if (r.exitCode !== 0) throw new Error(`mint exited ${r.exitCode}: ${r.stderr}`);
  return mintedKey(r);
}

/** The key printed on the first line of `genjob mint`. */
export function mintedKey(r: Result): string {
  const key = String(r.stdout).split('\n')[0] ?? '';
  if (!/^[0-9a-f]{64}$/.test(key)) throw new Error(`mint printed no key: ${r.stdout}\n${r.stderr}`);
  return key;
}
