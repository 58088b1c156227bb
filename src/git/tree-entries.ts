// What a commit holds at some paths: mode, object id and, when asked, the bytes — read from the tree
// objects themselves (one `cat-file --batch` for the directories, one for the blobs), never through a
// work tree or a pathspec, so a symlink is seen as mode 120000 and a name is matched byte for byte.
// Paths are contract paths (pathProblem passed: no control characters), so they fit cat-file's lines.
import { catFile, parseTree } from './cat-file.js';

export interface TreeEntryAt {
  mode: string;
  oid: string;
  /** The blob's bytes (with `contents`, for a regular file: mode 100644 or 100755). */
  bytes?: Buffer;
}

/** True for the two modes git gives a regular file. */
export function isRegularMode(mode: string): boolean {
  return mode === '100644' || mode === '100755';
}

/** The mode a generated commit gives an output: 100755 when its receipt says executable, else the mode its parent had there (a regular file), else 100644. */
export function outputMode(executable: boolean | undefined, before: string | undefined): string {
  if (executable) return '100755';
  return before !== undefined && isRegularMode(before) ? before : '100644';
}

/** The directory holding `path` ('' at the top: lastIndexOf's -1 becomes 0). */
function parentDir(path: string): string {
  return path.slice(0, Math.max(path.lastIndexOf('/'), 0));
}

/**
 * path → the entry `commit` (a full object id) holds there, or null when it holds nothing there (no such
 * name, or a parent directory that is not a directory). With `contents`, regular files carry their bytes.
 */
export async function treeEntries(
  root: string,
  commit: string,
  paths: readonly string[],
  opts: { contents: boolean },
): Promise<Map<string, TreeEntryAt | null>> {
  const dirs = [...new Set(paths.map(parentDir))];
  const trees = await catFile(
    root,
    dirs.map((d) => `${commit}:${d}`), // `<commit>:` is its root tree
    { contents: true },
  );
  const oidBytes = commit.length / 2;
  const byDir = new Map<string, Map<string, { mode: string; oid: string }>>();
  dirs.forEach((d, i) => {
    const t = trees[i];
    const names = new Map<string, { mode: string; oid: string }>();
    if (t?.type === 'tree') for (const e of parseTree(t.content!, oidBytes)) names.set(e.name, e);
    byDir.set(d, names);
  });
  const found = new Map<string, TreeEntryAt | null>();
  for (const p of paths) {
    const e = byDir.get(parentDir(p))!.get(p.slice(p.lastIndexOf('/') + 1));
    found.set(p, e === undefined ? null : { mode: e.mode, oid: e.oid });
  }
  if (opts.contents) {
    const files = [...found.values()].filter((e): e is TreeEntryAt => e !== null && isRegularMode(e.mode));
    const blobs = await catFile(
      root,
      files.map((e) => e.oid),
      { contents: true },
    );
    files.forEach((e, i) => {
      e.bytes = blobs[i]!.content!;
    });
  }
  return found;
}
