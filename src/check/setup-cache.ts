// A checker's `setup` (npm ci, a virtualenv) runs once per set of inputs: its digest covers the setup
// command, the checker's network and environment names, how it is confined and the digests of the
// pinned files in the tree being checked. What setup creates outside the tracked files (node_modules/,
// .venv/) is moved into .gen/check-setup/<digest>/tree/ and published by one rename, so an entry is
// whole or absent. Every run then sees those paths as symlinks into the entry, which bubblewrap binds
// read-only: the checked code can use the setup's result but never change it for the next run.
// Moved, tools must not depend on the directory they were made in (node_modules does not; a venv's
// scripts do: call `python -m`).
import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { canonicalBytes } from '../core/canonical-json.js';
import { errnoOf } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { createExclusive, fsyncDir, readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';
import type { BoundFile } from './binding.js';
import type { CommandChecker } from './checker.js';

export const SETUP_DIR = 'check-setup';
const MANIFEST = 'manifest.json';

export function setupDigest(
  checker: Pick<CommandChecker, 'setup' | 'network' | 'env'>,
  files: readonly BoundFile[],
  sandbox: 'bwrap' | 'none',
): string {
  return sha256Hex(
    canonicalBytes({
      schema: 'genjob/check-setup@1',
      setup: checker.setup,
      network: checker.network,
      env: checker.env,
      sandbox,
      files: [...files].sort((a, b) => (a.path < b.path ? -1 : 1)),
    }),
  );
}

export interface SetupEntry {
  /** The entry's tree: bound read-only into every run. */
  tree: string;
  paths: string[];
}

function entryDir(store: Store, digest: string): string {
  return join(store.layout.dir(SETUP_DIR), digest);
}

/** The published entry for `digest`, or undefined when there is none yet. */
export function findSetup(store: Store, digest: string): SetupEntry | undefined {
  const dir = entryDir(store, digest);
  const bytes = readIfExists(store, join(dir, MANIFEST));
  if (bytes === undefined) return undefined;
  const paths = (JSON.parse(bytes.toString('utf8')) as { paths: string[] }).paths;
  return { tree: join(dir, 'tree'), paths };
}

/** The maximal paths under `tree` that are neither tracked files nor directories holding them. */
export function createdPaths(tree: string, tracked: readonly string[]): string[] {
  const files = new Set(tracked);
  const dirs = new Set<string>();
  for (const t of tracked) for (let d = dirname(t); d !== '.'; d = dirname(d)) dirs.add(d);
  const found: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(rel ? join(tree, rel) : tree).sort()) {
      const path = rel ? `${rel}/${name}` : name;
      if (files.has(path)) continue;
      if (dirs.has(path) && lstatSync(join(tree, path)).isDirectory()) walk(path);
      else if (!dirs.has(path)) found.push(path);
    }
  };
  walk('');
  return found;
}

/**
 * Publish what a successful setup created in `tree` as the entry for `digest`, assembled in `staging`
 * (inside the check's scratch directory, which a sweep removes if we die). Another check that published
 * the same digest first wins; ours is discarded and theirs returned.
 */
export function publishSetup(
  store: Store,
  digest: string,
  from: { tree: string; tracked: readonly string[]; staging: string },
): SetupEntry {
  const root = store.layout.dir(SETUP_DIR);
  mkdirSync(root, { recursive: true });
  const { tree, tracked, staging } = from;
  mkdirSync(join(staging, 'tree'), { recursive: true });
  try {
    const paths = createdPaths(tree, tracked);
    for (const p of paths) {
      const to = join(staging, 'tree', ...p.split('/'));
      mkdirSync(dirname(to), { recursive: true });
      renameSync(join(tree, ...p.split('/')), to);
    }
    createExclusive(store, join(staging, MANIFEST), canonicalBytes({ paths }));
    fsyncDir(store, staging);
    try {
      renameSync(staging, entryDir(store, digest));
    } catch (err) {
      const code = errnoOf(err);
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
    fsyncDir(store, root);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return findSetup(store, digest)!;
}

/** Make the entry's paths appear in a run's tree, as symlinks into the entry. */
export function linkSetup(entry: SetupEntry, tree: string): void {
  for (const p of entry.paths) {
    const at = join(tree, ...p.split('/'));
    mkdirSync(dirname(at), { recursive: true });
    try {
      symlinkSync(join(entry.tree, ...p.split('/')), at);
    } catch (err) {
      // the tree tracks a file there now: the tracked file wins
      if (errnoOf(err) !== 'EEXIST') throw err;
    }
  }
}
