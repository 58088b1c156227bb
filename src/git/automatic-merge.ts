// What a merge commit would hold had git merged its parents by itself: `git merge-tree --write-tree`
// (the ort strategy `git merge` uses) of the first two parents, then of that result with each further
// parent (an octopus), each step recorded as a throwaway commit object. A merge whose tree differs from
// this in some path made a change of its own there — a conflict resolved by hand, or an "evil merge" —
// and the gate judges those paths as it judges a person's commit. Conflicted paths count: the automatic
// tree holds the conflict markers, which the merge must have replaced. The merge runs sealed
// (scratch-objects.ts): nothing written into the repository, no merge driver chosen by the branch's
// .gitattributes.
import { git, gitText } from './run-git.js';
import type { ScratchObjects } from './scratch-objects.js';

/** Fixed identity and date for the throwaway commits of an octopus (nothing refers to them). */
const THROWAWAY = {
  GIT_AUTHOR_NAME: 'genjob',
  GIT_AUTHOR_EMAIL: 'genjob@localhost',
  GIT_AUTHOR_DATE: '@0 +0000',
  GIT_COMMITTER_NAME: 'genjob',
  GIT_COMMITTER_EMAIL: 'genjob@localhost',
  GIT_COMMITTER_DATE: '@0 +0000',
};

/** The tree id of the automatic merge of `parents` (two or more commit ids), written to `scratch` only. */
export async function automaticMergeTree(
  parents: readonly string[],
  scratch: ScratchObjects,
): Promise<string> {
  const { cwd, env } = await scratch.sealed();
  let ours = parents[0]!;
  let tree = '';
  for (const [i, theirs] of parents.slice(1).entries()) {
    // exit 1: conflicts; the tree written still holds every path, conflicted ones with markers
    const r = await git(
      cwd,
      ['merge-tree', '--write-tree', '--no-messages', '--allow-unrelated-histories', ours, theirs],
      { okCodes: [1], env },
    );
    tree = r.stdout.toString('utf8').split('\n')[0]!;
    if (i < parents.length - 2)
      ours = await gitText(
        cwd,
        ['commit-tree', tree, '-p', ours, '-p', theirs, '-m', 'genjob: automatic merge'],
        {
          env: { ...THROWAWAY, ...env },
        },
      );
  }
  return tree;
}

/** True when `to` differs from `from` (trees or commits, `from` may be in `scratch`) in a path `pathspecs` match (all paths when empty). */
export async function changesPaths(
  root: string,
  from: string,
  to: string,
  pathspecs: readonly string[],
  scratch: ScratchObjects,
): Promise<boolean> {
  const r = await git(root, ['diff-tree', '-r', '--quiet', from, to, '--', ...pathspecs], {
    okCodes: [1],
    env: await scratch.reading(),
  });
  return r.code === 1;
}
