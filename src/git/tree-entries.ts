// What a commit holds at some paths: mode, object id and, when asked, the bytes — read from the tree
// objects themselves, never through a work tree or a pathspec, so a symlink is seen as mode 120000 and a
// name is matched byte for byte. One `cat-file --batch` reads the directories and, when bytes are asked
// for, each path's object too; a blob is taken only when it is the object its tree entry names (a hostile
// tree may hold one name twice, and git's own lookup may pick another entry than this parse), and read by
// its id otherwise.
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
  const read = await catFile(
    root,
    [
      ...dirs.map((d) => `${commit}:${d}`), // `<commit>:` is its root tree
      ...(opts.contents ? paths.map((p) => `${commit}:${p}`) : []),
    ],
    { contents: true },
  );
  const oidBytes = commit.length / 2;
  const byDir = new Map<string, Map<string, { mode: string; oid: string }>>();
  dirs.forEach((d, i) => {
    const t = read[i];
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
    const unread: TreeEntryAt[] = [];
    paths.forEach((p, i) => {
      const e = found.get(p);
      if (e === null || e === undefined || !isRegularMode(e.mode) || e.bytes !== undefined) return;
      const o = read[dirs.length + i];
      if (o?.type === 'blob' && o.oid === e.oid) e.bytes = o.content!;
      else unread.push(e);
    });
    const blobs = await catFile(
      root,
      unread.map((e) => e.oid),
      { contents: true },
    );
    unread.forEach((e, i) => {
      e.bytes = blobs[i]!.content!;
    });
  }
  return found;
}
