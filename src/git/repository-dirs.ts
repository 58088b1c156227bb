// What of the repository confined code (a checker, a generator run by a local serve) must not see beside
// what it is given: the work tree and, from a linked worktree (`git worktree add`), the repository's
// common git directory and its main work tree. Those hold the other checkout's .git/ (every branch, the
// config), .gen/ (records, outputs, setup cache) and untracked files (.env), and a system directory shows
// them when they live under /opt or /usr/src. Masking a directory covers whatever lies inside it (a
// worktree made inside the main checkout too); what is bound on purpose (a checker's copy) still shows on top.
import { basename, dirname, resolve } from 'node:path';
import { gitText } from './run-git.js';

/** Asked once per repository and process: `check --all` runs a checker per job, each under this mask. */
const asked = new Map<string, Promise<string[]>>();

/** `root`, and, for a linked worktree, the common git directory and the main work tree it belongs to. */
export function repositoryDirs(root: string): Promise<string[]> {
  let dirs = asked.get(root);
  if (dirs === undefined) {
    dirs = ask(root);
    asked.set(root, dirs);
    dirs.catch(() => asked.delete(root)); // a failure is not kept: the next caller asks git again
  }
  return dirs;
}

/**
 * Record what git said `root`'s common git directory is (`rev-parse --path-format=absolute
 * --git-common-dir`), asked together with other things (check's one rev-parse of HEAD), so that
 * repositoryDirs starts no git of its own for it.
 */
export function knownCommonDir(root: string, commonDir: string): void {
  if (!asked.has(root)) asked.set(root, Promise.resolve(dirsOf(root, commonDir)));
}

async function ask(root: string): Promise<string[]> {
  return dirsOf(root, await gitText(root, ['rev-parse', '--path-format=absolute', '--git-common-dir']));
}

function dirsOf(root: string, commonDir: string): string[] {
  const common = resolve(root, commonDir);
  // a non-bare repository's common directory is its main work tree's .git; a bare one has no work tree
  const main = basename(common) === '.git' ? [dirname(common)] : [];
  return [...new Set([resolve(root), common, ...main])];
}
