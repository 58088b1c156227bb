// Fresh temp directories for filesystem tests, each removed after the test that made it (or, asked for, after
// the last test of its file, for a fixture tests share): a bare one, a
// Store root with its .gen/ made, or a repository root (repo/ with .git/ and some files) beside scratch
// space. Cleanups registered with `afterTest` run first, so a child process is killed before its
// directory goes.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Store } from '../../src/store/store.js';

const temps: string[] = [];
const fileTemps: string[] = [];
const cleanups: Array<() => void> = [];

/**
 * Run the cleanups and remove the temp directories of the test that just ended. The setup file
 * (test/helpers/after-each-test.ts) hooks it after every test of every file: a hook registered here, when
 * this module is first imported, would belong to that first file alone in a worker that shares its
 * modules from file to file.
 */
export function cleanUpAfterTest(): void {
  for (const c of cleanups.splice(0)) c();
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/**
 * Remove the temp directories made to last the whole file (the setup file hooks it after each file's last
 * test). It runs after the file's own afterAll hooks (vitest runs after-hooks in stack order, and the setup
 * file's come first), so a file may still use them there: unmount, stop a server.
 */
export function cleanUpAfterFile(): void {
  for (const d of fileTemps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Run `fn` after the current test, before its temp directories are removed. */
export function afterTest(fn: () => void): void {
  cleanups.push(fn);
}

/**
 * A fresh directory under the system temp dir, removed after the test (`life: 'file'`: after the file's last
 * test). Run as root, every user may search and write it, as a root host shares the places its generators
 * read and write (their scripts, logs, markers): a serve or check run as root runs its sandbox as nobody,
 * which must reach what it binds and write what it is given writable.
 */
export function tempDir(prefix: string, parent = tmpdir(), life: 'test' | 'file' = 'test'): string {
  const dir = mkdtempSync(join(parent, prefix));
  if (process.getuid?.() === 0) chmodSync(dir, 0o777);
  (life === 'file' ? fileTemps : temps).push(dir);
  return dir;
}

/** A Store in a fresh temp root, its .gen/ directories made. */
export function tempStore(prefix: string): Store {
  return new Store(tempDir(prefix)).ensure();
}

/** `base/repo`: a repository root (an empty .git/ and `files`) with its Store made; `base` is scratch space. */
export function tempRepo(
  prefix: string,
  files: Record<string, string> = {},
): { base: string; root: string; store: Store } {
  const base = tempDir(prefix);
  const root = join(base, 'repo');
  mkdirSync(join(root, '.git'), { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return { base, root, store: new Store(root).ensure() };
}
