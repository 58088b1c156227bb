// The paths a fan-out mint expands over: the regular files git tracks (`git ls-files`, mode 100644 or
// 100755: no symlinks, no submodules) that match a glob (git's `:(glob)` pathspec, `**` across
// directories), or that a file lists one per line. Both are relative to the repository root, sorted
// in code-unit order and without repeats; nothing matching, or a listed path git does not track, is
// bad usage (exit 2): a run over nothing is a typo, not a run.
import { GitFailedError, UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { pathProblem } from '../core/paths.js';
import { readText } from '../core/read-text.js';
import { git } from '../git/run-git.js';

const REGULAR_MODES = new Set(['100644', '100755']);

/** Regular tracked files under `root` (relative to it) matching the pathspecs; all of them when none. */
async function trackedFiles(root: string, pathspecs: readonly string[], flag: string): Promise<string[]> {
  let out: Buffer;
  try {
    ({ stdout: out } = await git(root, ['ls-files', '-s', '-z', '--', ...pathspecs]));
  } catch (err) {
    if (!(err instanceof GitFailedError) || err.exitCode === EXIT.IO) throw err;
    throw new UsageError(
      'EGJ_USAGE',
      `${root}: ${flag} takes the files git tracks, and git could not list them (${err.message})`,
      { cause: err },
    );
  }
  const paths = new Set<string>();
  for (const entry of out.toString('utf8').split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    if (REGULAR_MODES.has(entry.slice(0, entry.indexOf(' ')))) paths.add(entry.slice(tab + 1));
  }
  return sorted(paths);
}

function sorted(paths: Iterable<string>): string[] {
  return [...paths].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The tracked regular files matching `glob` (relative to the root), sorted. */
export async function eachMatch(root: string, glob: string): Promise<string[]> {
  if (glob.trim() === '') throw new UsageError('EGJ_USAGE', '--each takes a glob, e.g. --each "src/**/*.py"');
  const paths = await trackedFiles(root, [`:(glob)${glob}`], '--each');
  if (paths.length === 0)
    throw new UsageError(
      'EGJ_NO_MATCH',
      `--each ${JSON.stringify(glob)}: matches no file git tracks under ${root} (the glob is relative to the repository root; ** crosses directories)`,
    );
  return paths;
}

/** The paths `file` lists (one per line; blank lines skipped), each a tracked regular file; sorted. */
export async function eachListed(root: string, file: string): Promise<string[]> {
  let text: string;
  try {
    text = readText(file === '-' ? 0 : file);
  } catch (err) {
    throw new UsageError(
      'EGJ_BAD_INPUT',
      `${file}: cannot read the --each-file list (${(err as Error).message})`,
    );
  }
  const listed = new Set<string>();
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') continue;
    const problem = pathProblem(line);
    if (problem)
      throw new UsageError('EGJ_BAD_PATH', `${file}:${i + 1}: ${JSON.stringify(line)}: ${problem}`);
    listed.add(line);
  }
  if (listed.size === 0) throw new UsageError('EGJ_NO_MATCH', `${file}: lists no path (one per line)`);
  const tracked = new Set(await trackedFiles(root, [], '--each-file'));
  const untracked = [...listed].filter((p) => !tracked.has(p));
  if (untracked.length > 0)
    throw new UsageError(
      'EGJ_BAD_PATH',
      `${file}: ${untracked.length} listed path(s) are not regular files git tracks (${untracked
        .slice(0, 3)
        .map((p) => JSON.stringify(p))
        .join(', ')}${untracked.length > 3 ? ', …' : ''}); paths are relative to the repository root`,
    );
  return sorted(listed);
}
