// Helpers for the ssh end-to-end tests: a tiny repository in a fresh temp dir, the built CLI run
// as a process with its own XDG_CACHE_HOME, `work` flags pointing at the harness sshd, a remote
// command that runs the built CLI (there is no global install) with its own cache dir, and
// byte-for-byte snapshots of file trees. Only 127.0.0.1 is ever a target.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execa, type Options, type ResultPromise } from 'execa';
import { afterEach } from 'vitest';
import { readJournal } from '../../src/store/journal.js';
import { Store } from '../../src/store/store.js';
import type { SshdHandle } from '../helpers/sshd.js';
import { snapshot, type TreeSnapshot } from '../helpers/tree-snapshot.js';

export { snapshot, treeEntries } from '../helpers/tree-snapshot.js';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
/**
 * The built CLI. GENJOB_E2E_APP may name a copy of the package (bin/, dist/, package.json) so a
 * run is not disturbed by a concurrent `npm run build`, which deletes dist/ before rebuilding it.
 */
export const CLI = path.join(process.env.GENJOB_E2E_APP ?? REPO_ROOT, 'bin/genjob.js');
export const NODE = process.execPath;
export const HOSTILE_REMOTE = path.join(REPO_ROOT, 'fixtures/hostile-remote/serve.mjs');

/** A scratch area for one test: the repo, the worker's and the host's cache dirs, and counters. */
export interface Sandbox {
  dir: string;
  repo: string;
  /** XDG_CACHE_HOME of the worker-side CLI processes. */
  workerCache: string;
  /** --cache-dir of the remote `genjob serve`. */
  hostCache: string;
  cleanup(): Promise<void>;
}

// Short prefix: the ssh control socket lives in <repo>/.gen/ssh, which must stay ≤ 49 bytes.
export async function sandbox(files: Record<string, string> = TOY_FILES): Promise<Sandbox> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gj-e2e-'));
  // run as root, serve runs its generators as nobody: the test's scratch dir (scripts, counters, markers,
  // exposed writable to them) is theirs to reach and write, as a host shares such a directory
  if (process.getuid?.() === 0) await chmod(dir, 0o777);
  const repo = path.join(dir, 'r');
  const workerCache = path.join(dir, 'wc');
  const hostCache = path.join(dir, 'hc');
  for (const d of [repo, workerCache, hostCache]) await mkdir(d);
  await mkdir(path.join(repo, '.git'));
  await writeTree(repo, files);
  return { dir, repo, workerCache, hostCache, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A `box()` that makes a sandbox and removes it after each test (call at the top of a test file). */
export function useBoxes(): (files?: Record<string, string>) => Promise<Sandbox> {
  const boxes: Sandbox[] = [];
  afterEach(async () => {
    for (const b of boxes.splice(0)) await b.cleanup();
  });
  return async (files) => {
    const b = await sandbox(files);
    boxes.push(b);
    return b;
  };
}

export const TOY_FILES: Record<string, string> = {
  'README.md': '# toy\n',
  'src/a.txt': 'alpha\n',
  'src/b.txt': 'bravo\n',
  'src/keep.txt': 'not in any job\n',
};

export async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), text);
  }
}

/** Run the built CLI in `cwd` with an isolated XDG_CACHE_HOME. Never rejects. */
export function genjob(
  sb: Pick<Sandbox, 'repo' | 'workerCache'>,
  args: readonly string[],
  extra: Options = {},
): ResultPromise<{ reject: false; all: false }> {
  return execa(NODE, [CLI, ...args], {
    cwd: sb.repo,
    reject: false,
    stdin: 'ignore',
    // a confined local generator may use the test's scratch dir (scripts, counters, markers)
    env: { XDG_CACHE_HOME: sb.workerCache, NO_COLOR: '1', GENJOB_GENERATOR_BIND_RW: path.dirname(sb.repo) },
    ...extra,
  } as Options) as ResultPromise<{ reject: false; all: false }>;
}

/**
 * The remote command that starts the built CLI's serve on the host, with the host's own cache. Its
 * confined generators may use the test's scratch dir (serve still hides the cache inside it) and
 * read the package.
 */
export function remoteServe(hostCache: string): string {
  const exposed = `--generator-bind-rw ${path.dirname(hostCache)} --generator-bind ${REPO_ROOT}`;
  return `${NODE} ${CLI} serve --session --cache-dir ${hostCache} ${exposed}`;
}

/**
 * `work` flags that reach the harness sshd by address, port and identity. The harness client config
 * (-F, so ~/.ssh/config plays no part) only describes its alias, so the known_hosts file is named here.
 */
export function sshFlags(sshd: SshdHandle, remoteCmd: string): string[] {
  return [
    '--host',
    `${sshd.user}@${sshd.host}`,
    '--port',
    String(sshd.port),
    '--identity',
    sshd.identityFile,
    '--ssh-config',
    sshd.sshConfigFile,
    '--ssh-option',
    `UserKnownHostsFile=${sshd.knownHostsFile}`,
    '--ssh-option',
    'GlobalKnownHostsFile=/dev/null',
    '--ssh-option',
    'StrictHostKeyChecking=yes',
    '--remote-cmd',
    remoteCmd,
  ];
}

/** Mint a job and return its key. */
export async function mint(sb: Sandbox, message: string, paths: readonly string[]): Promise<string> {
  const r = await genjob(sb, ['mint', '--json', '-m', message, ...paths]);
  if (r.exitCode !== 0) throw new Error(`mint failed (${r.exitCode}): ${r.stderr}`);
  return JSON.parse(String(r.stdout)).key as string;
}

/**
 * A generator script: appends one line to `counter` each time it runs, optionally signals
 * `startedMarker` and waits for `releaseFile`, then writes `text` into `target`.
 */
export async function writeGenerator(
  dir: string,
  o: { counter: string; target: string; text: string; startedMarker?: string; releaseFile?: string },
): Promise<string> {
  const file = path.join(dir, `gen-${path.basename(o.counter)}.mjs`);
  await writeFile(
    file,
    [
      "import { appendFileSync, existsSync, writeFileSync } from 'node:fs';",
      `appendFileSync(${JSON.stringify(o.counter)}, 'run ' + process.env.GENJOB_KEY + '\\n');`,
      o.startedMarker ? `writeFileSync(${JSON.stringify(o.startedMarker)}, 'started\\n');` : '',
      o.releaseFile
        ? `while (!existsSync(${JSON.stringify(o.releaseFile)})) await new Promise((r) => setTimeout(r, 50));`
        : '',
      `writeFileSync(${JSON.stringify(o.target)}, ${JSON.stringify(o.text)});`,
      '',
    ].join('\n'),
  );
  return `${NODE} ${file}`;
}

/** Lines in a counter file (0 when it does not exist). */
export function countLines(file: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
}

/** The repository's working tree (everything but .gen/), byte for byte. */
export function repoTree(sb: Sandbox): TreeSnapshot {
  return snapshot(sb.repo, ['.gen']);
}

/** Entries of a .gen/ subdirectory (empty when it does not exist). */
export function genDir(sb: Sandbox, sub: string): string[] {
  const d = path.join(sb.repo, '.gen', sub);
  return existsSync(d) ? readdirSync(d).sort() : [];
}

export interface JournalLine {
  event: string;
  key?: string;
  [field: string]: unknown;
}

export function journal(sb: Sandbox, key?: string): JournalLine[] {
  return readJournal(new Store(sb.repo), key);
}

/** `ssh-keygen -lf` of a public key file: its type and SHA256 fingerprint. */
export function fingerprintOf(pubFile: string): { type: string; fingerprint: string } {
  const line = execFileSync('ssh-keygen', ['-lf', pubFile], { encoding: 'utf8' }).trim();
  const m = /^\d+ (SHA256:\S+) .* \((\w+)\)$/.exec(line);
  if (!m) throw new Error(`unexpected ssh-keygen -lf output: ${line}`);
  return { fingerprint: m[1]!, type: m[2]! };
}

/** Wait (without asserting on time) until `check` holds; `what` names it if it never does (the limit guards against a hang only). */
export async function waitFor(what: string, check: () => boolean, limitMs = 600_000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`waited ${limitMs} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Wait until `check` holds while `proc` runs; if `proc` exits first (or never gets there), fail
 * with its exit code and stderr, which say why.
 */
export async function waitWhileRunning(
  what: string,
  check: () => boolean,
  proc: ResultPromise,
  diagnose: () => string = () => '',
): Promise<void> {
  let exited = false;
  void proc.then(() => {
    exited = true;
  });
  try {
    await waitFor(what, () => check() || exited);
  } catch (err) {
    throw new Error(`${(err as Error).message}; still running; ${diagnose()}`);
  }
  if (!check()) {
    const r = await proc;
    throw new Error(
      `the process exited (${r.exitCode ?? r.signal}) before ${what}: ${String(r.stderr)}; ${diagnose()}`,
    );
  }
}

/** PIDs descended from `root`, with their command lines (read from /proc). */
export function descendantsOf(root: number): Array<{ pid: number; cmdline: string }> {
  const parent = new Map<number, number>();
  const cmd = new Map<number, string>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      parent.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      cmd.set(Number(e), readFileSync(`/proc/${e}/cmdline`, 'utf8').replaceAll('\0', ' ').trim());
    } catch {
      // exited while we looked
    }
  }
  const out: Array<{ pid: number; cmdline: string }> = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const p = frontier.pop()!;
    for (const [pid, pp] of parent) {
      if (pp === p) {
        out.push({ pid, cmdline: cmd.get(pid) ?? '' });
        frontier.push(pid);
      }
    }
  }
  return out;
}

/** The receipt committed for `key` (its payload, when the host signed it). */
export function committedReceipt(
  sb: Pick<Sandbox, 'repo'>,
  key: string,
): Record<string, unknown> & { status: string; reason: string | null } {
  const doc = JSON.parse(readFileSync(path.join(sb.repo, '.gen/receipts', `${key}.json`), 'utf8'));
  return doc.payload ? JSON.parse(Buffer.from(doc.payload, 'base64').toString()) : doc;
}

/** The result entries the host's cache holds for a key. */
export function hostResults(hostCache: string, key: string): string[] {
  const d = path.join(hostCache, 'results');
  return existsSync(d) ? readdirSync(d).filter((n) => n.startsWith(`${key}.`)) : [];
}
