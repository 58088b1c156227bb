// Resolve a contract path to a place inside the repository that is safe to read or write.
// Invariant: every ancestor is an lstat-checked real directory under root (never a symlink) and the target
// is a regular file or absent, so genjob never writes outside the repository or through a symlink.
// Missing ancestors are created one at a time (0755, parent fsynced, or left to the caller's batch). Node has
// no openat(), so the window between this check and a write is closed by re-resolving right before each
// rename (tree-file.ts).
import type { Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConflictError, errnoOf, IoError, UsageError } from '../core/errors.js';
import { ancestors, pathProblem } from '../core/paths.js';
import { fsyncDir } from '../store/durable.js';
import type { Store } from '../store/store.js';

export interface RepoTarget {
  /** The contract path ('src/a.ts'). */
  path: string;
  /** Absolute path of the target inside the repository. */
  abs: string;
  /** Absolute path of the target's directory. */
  dir: string;
  /** lstat of the target when it is a regular file; null when it (or one of its ancestors) is absent. */
  file: Stats | null;
  /** The deepest directory of the chain that exists (`dir` itself once every ancestor does). */
  existing: string;
}

export class UnsafeRepoPathError extends ConflictError {
  constructor(
    readonly path: string,
    rule: string,
  ) {
    super(
      'EGJ_UNSAFE_PATH',
      `${path}: ${rule}; genjob never writes outside the repository or through a symlink`,
    );
  }
}

function lstatOrNull(store: Store, abs: string): Stats | null {
  try {
    return store.fs.lstatSync(abs);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw IoError.wrap('lstat', abs, err);
  }
}

export interface ResolveOptions {
  /** Make missing ancestors (0755), each parent fsynced after its mkdir. */
  create: boolean;
  /** With `create`: add each such parent here instead, for the caller to fsync once for a whole batch. */
  parentsToSync?: Set<string>;
  /** With `create`: each directory this call made (not one found made) is appended here, shallowest first. */
  made?: string[];
}

/** Check (and with `create`, make) every ancestor of `path`; then look at the target itself. */
export function resolveRepoPath(store: Store, path: string, opts: ResolveOptions): RepoTarget {
  const problem = pathProblem(path);
  if (problem) throw new UsageError('EGJ_BAD_PATH', `${JSON.stringify(path)}: ${problem}`);
  const abs = join(store.root, ...path.split('/'));
  const dir = dirname(abs);
  let existing = store.root;
  for (const rel of ancestors(path)) {
    const at = join(store.root, ...rel.split('/'));
    let st = lstatOrNull(store, at);
    if (st === null) {
      if (!opts.create) return { path, abs, dir, file: null, existing };
      try {
        store.fs.mkdirSync(at, { mode: 0o755 });
        opts.made?.push(at);
        if (opts.parentsToSync) opts.parentsToSync.add(dirname(at));
        else fsyncDir(store, dirname(at));
      } catch (err) {
        if (errnoOf(err) !== 'EEXIST') throw IoError.wrap('mkdir', at, err);
      }
      st = lstatOrNull(store, at);
    }
    if (st === null)
      throw new UnsafeRepoPathError(path, `directory ${rel}/ vanished while it was being created`);
    if (st.isSymbolicLink()) throw new UnsafeRepoPathError(path, `its directory ${rel} is a symlink`);
    if (!st.isDirectory())
      throw new UnsafeRepoPathError(path, `${rel} is in its directory chain but is not a directory`);
    existing = at;
  }
  const st = lstatOrNull(store, abs);
  if (st === null) return { path, abs, dir, file: null, existing };
  if (st.isSymbolicLink()) throw new UnsafeRepoPathError(path, 'the target is a symlink');
  if (!st.isFile()) throw new UnsafeRepoPathError(path, 'the target exists but is not a regular file');
  return { path, abs, dir, file: st, existing };
}
