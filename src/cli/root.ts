// Find the repository root: --root if given, else walk up from the working directory to the
// first directory holding .gen/ or .git/. Every command works from there, wherever it is run.
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from '../core/errors.js';
import { pathExists } from '../core/path-exists.js';
import { sweepStaleTemps } from '../store/durable.js';
import { sweepDeadLocks } from '../store/lock-owner.js';
import { Store } from '../store/store.js';

export function findRoot(explicit?: string, cwd = process.cwd()): string {
  if (explicit !== undefined) {
    const root = resolve(cwd, explicit);
    if (!pathExists(root) || !statSync(root).isDirectory()) {
      throw new UsageError('EGJ_BAD_ROOT', `${root}: --root must name an existing directory`);
    }
    return root;
  }
  let dir = resolve(cwd);
  for (;;) {
    if (pathExists(join(dir, '.gen')) || pathExists(join(dir, '.git'))) return dir;
    const up = dirname(dir);
    if (up === dir) {
      throw new UsageError(
        'EGJ_NO_ROOT',
        `${cwd}: no .gen/ or .git/ here or above; run inside a repository or pass --root DIR`,
      );
    }
    dir = up;
  }
}

export function openStore(opts: { root?: string }): Store {
  const store = new Store(findRoot(opts.root)).ensure();
  // what writers of .gen/ that died (or failed to clean up) left: temps in .gen/tmp, locks and their intents
  sweepStaleTemps(store, undefined, undefined, [store.layout.tmp]);
  sweepDeadLocks(store.layout.dir('locks'));
  return store;
}

/** The store of a command that only looks (status, show, verify): .gen/ is never created. */
export function lookStore(opts: { root?: string }): Store {
  return new Store(findRoot(opts.root));
}
