// `apply --commit`: one commit holding exactly one job's outputs and nothing else. A temporary index
// (GIT_INDEX_FILE in .gen/tmp) is read from HEAD, only the outputs are put in it (hash-object
// --no-filters, so the verified bytes go in as they are), then write-tree, commit-tree and
// update-ref HEAD <new> <old> (compare-and-swap: a HEAD moved meanwhile fails, nothing is lost). The
// user's staged and unstaged changes are never read; only the outputs' entries in the real index
// are set to the committed blobs, so `git status` shows them clean. Each output's mode is the receipt's
// (100755 when it says executable, else the mode HEAD gives the path, 100644 for a new file): what the
// gate holds the commit to. `apply --commit` checks first that a commit can be made at all
// (commit-preflight.ts), so it never writes files it then cannot commit.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathExists } from '../core/path-exists.js';
import type { Store } from '../store/store.js';
import { git, gitText } from './run-git.js';
import { commitMessage } from './trailers.js';
import { outputMode, treeEntries } from './tree-entries.js';

export interface CommitJobInput {
  key: string;
  instruction: string;
  receiptSha256: string;
  signer: string | null;
  outputs: ReadonlyArray<{ path: string; sha256: string; executable?: true }>;
  /** Passing check records to name in Genjob-Check trailers. */
  checks?: ReadonlyArray<{ name: string; digest: string }>;
}

export type CommitOutcome = { status: 'committed'; commit: string } | { status: 'unchanged' };

/** A path for update-index --index-info: C-quoted (paths passed pathProblem, so no control characters). */
function quote(path: string): string {
  return `"${path.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export async function commitJob(store: Store, job: CommitJobInput): Promise<CommitOutcome> {
  const root = store.root;
  const head = await git(root, ['rev-parse', '-q', '--verify', 'HEAD^{commit}'], { okCodes: [1] });
  const parent = head.code === 0 ? head.stdout.toString('utf8').trim() : null;
  const index = join(store.layout.tmp, `index-${process.pid}-${job.key.slice(0, 12)}`);
  const env = { GIT_INDEX_FILE: index };
  try {
    await git(root, parent ? ['read-tree', parent] : ['read-tree', '--empty'], { env });
    const files = job.outputs.map((o) => {
      const out = join(store.layout.outDir(job.key), ...o.path.split('/'));
      return pathExists(out) ? out : store.layout.object(o.sha256);
    });
    const oids = (
      await gitText(root, ['hash-object', '-w', '--no-filters', '--stdin-paths'], {
        input: `${files.join('\n')}\n`,
      })
    ).split('\n');
    const before = parent
      ? await treeEntries(
          root,
          parent,
          job.outputs.map((o) => o.path),
          { contents: false },
        )
      : new Map<string, null>();
    const entries = job.outputs
      .map((o, i) => `${outputMode(o.executable, before.get(o.path)?.mode)} ${oids[i]}\t${quote(o.path)}\n`)
      .join('');
    await git(root, ['update-index', '--index-info'], { env, input: entries });
    const tree = await gitText(root, ['write-tree'], { env });
    if (parent && tree === (await gitText(root, ['rev-parse', `${parent}^{tree}`])))
      return { status: 'unchanged' };
    const message = commitMessage(job.instruction, job.key, job.receiptSha256, job.signer, job.checks);
    const commit = await gitText(root, ['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-F', '-'], {
      input: message,
    });
    await git(root, [
      'update-ref',
      '-m',
      `genjob apply --commit ${job.key.slice(0, 12)}`,
      'HEAD',
      commit,
      parent ?? '',
    ]);
    // the real index: the outputs' entries only. A missing index stays missing, except on a branch that was
    // unborn: there it meant "nothing staged", and left missing it would now stage the outputs' deletion.
    const realIndex = await gitText(root, ['rev-parse', '--path-format=absolute', '--git-path', 'index']);
    if (pathExists(realIndex) || parent === null)
      await git(root, ['update-index', '--index-info'], { input: entries });
    return { status: 'committed', commit };
  } finally {
    rmSync(index, { force: true });
    rmSync(`${index}.lock`, { force: true });
  }
}
