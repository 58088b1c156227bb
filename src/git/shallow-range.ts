// A shallow clone (CI checkouts often fetch only the last N commits) shows each commit at its boundary
// without parents: `git log BASE..TIP` stops there and every commit below it, already on the branch and
// about to be merged with it, is never listed. A gate over such a range would pass commits it never saw,
// so a range that reaches the boundary is refused (fetch the full history) instead of judged.
import { readFileSync } from 'node:fs';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { gitText } from './run-git.js';

/** Refuse (EGJ_USAGE) when one of `commits` (of `range`) is a shallow boundary: its parents were not fetched. */
export async function refuseShallowCut(
  root: string,
  range: string,
  commits: readonly string[],
): Promise<void> {
  const [shallow, file] = (
    await gitText(root, [
      'rev-parse',
      '--is-shallow-repository',
      '--path-format=absolute',
      '--git-path',
      'shallow',
    ])
  ).split('\n');
  if (shallow !== 'true' || commits.length === 0) return;
  let cut: Set<string>;
  try {
    cut = new Set(readFileSync(file!, 'utf8').split('\n'));
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw IoError.wrap('read', file!, err);
  }
  const first = commits.find((c) => cut.has(c));
  if (first !== undefined)
    throw new UsageError(
      'EGJ_USAGE',
      `--commits ${JSON.stringify(range)}: this clone is shallow and its history ends at commit ${first.slice(0, 12)}, inside the range: the commits below it are part of the branch but not here to be judged; fetch the full history (git fetch --unshallow, or fetch-depth: 0 in CI)`,
    );
}
