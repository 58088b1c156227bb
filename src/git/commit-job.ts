// `apply --commit` (and `revert --commit`): one commit holding exactly one job's files and nothing else. A
// temporary index (GIT_INDEX_FILE in .gen/tmp) is read from HEAD, only those files are put in it (hash-object
// --no-filters, so the verified bytes go in as they are) or taken out of it, then write-tree, commit-tree
// and update-ref HEAD <new> <old> (compare-and-swap: a HEAD moved meanwhile fails, nothing is lost). The
// user's staged and unstaged changes are never read; only those files' entries in the real index are set
// to the commit's, so `git status` shows them clean. A job's output gets the receipt's mode (100755 when it
// says executable, else the mode HEAD gives the path, 100644 for a new file): what the gate holds the
// commit to. Both commands check first that a commit can be made at all (commit-preflight.ts), so they
// never write files they then cannot commit.
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathExists } from '../core/path-exists.js';
import type { Store } from '../store/store.js';
import { git, gitSteps, gitText } from './run-git.js';
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

let indexSeq = 0;

/** One path of a commit: the file whose bytes it gets, or null to take the path out of the tree. */
export interface CommitFile {
  path: string;
  source: string | null;
  /** A job's output: whether its receipt says executable (the mode is then outputMode's); else the work tree's bit decides. */
  receiptExecutable?: boolean;
}

export async function commitJob(store: Store, job: CommitJobInput): Promise<CommitOutcome> {
  const files = job.outputs.map((o) => {
    const out = join(store.layout.outDir(job.key), ...o.path.split('/'));
    return {
      path: o.path,
      source: pathExists(out) ? out : store.layout.object(o.sha256),
      receiptExecutable: o.executable === true,
    };
  });
  return commitFiles(store, {
    files,
    message: commitMessage(job.instruction, job.key, job.receiptSha256, job.signer, job.checks),
    reflog: `genjob apply --commit ${job.key.slice(0, 12)}`,
  });
}

/** Commit exactly `files` on top of HEAD (an output's mode from its receipt, any other file's from the work tree), with `message`. */
export async function commitFiles(
  store: Store,
  c: { files: readonly CommitFile[]; message: string; reflog: string },
): Promise<CommitOutcome> {
  const root = store.root;
  // the real index's path (outside GIT_INDEX_FILE below, which --git-path would name instead) and HEAD's
  // commit, none on an unborn branch (exit 1), in one rev-parse; from the end: the path may hold a newline
  const head = await git(
    root,
    ['rev-parse', '--path-format=absolute', '--git-path', 'index', '-q', '--verify', 'HEAD^{commit}'],
    { okCodes: [1] },
  );
  const said = head.stdout.toString('utf8').replace(/\n$/, '').split('\n');
  const parent = head.code === 0 ? said.pop()! : null;
  const realIndex = said.join('\n');
  const index = join(store.layout.tmp, `index-${process.pid}-${++indexSeq}`);
  const env = { GIT_INDEX_FILE: index };
  try {
    // the index read from HEAD and the files' blobs written, in one sh
    const kept = c.files.filter((f) => f.source !== null);
    const read = await gitSteps(
      root,
      [
        parent ? ['read-tree', parent] : ['read-tree', '--empty'],
        ...(kept.length === 0 ? [] : [['hash-object', '-w', '--no-filters', '--stdin-paths']]),
      ],
      { env, input: kept.length === 0 ? '' : `${kept.map((f) => f.source).join('\n')}\n` },
    );
    const oids = read.stdout.toString('utf8').split('\n').slice(0, kept.length);
    const oidOf = new Map(kept.map((f, i) => [f.path, oids[i]!]));
    const outputs = c.files.filter((f) => f.receiptExecutable !== undefined).map((f) => f.path);
    const before =
      parent && outputs.length > 0
        ? await treeEntries(root, parent, outputs, { contents: false })
        : new Map<string, null>();
    const entries = c.files
      .map((f) => {
        const oid = oidOf.get(f.path);
        // mode 0 takes the path out of the index
        if (oid === undefined) return `0 ${'0'.repeat(40)}\t${quote(f.path)}\n`;
        const mode =
          f.receiptExecutable !== undefined
            ? outputMode(f.receiptExecutable, before.get(f.path)?.mode)
            : executable(join(root, f.path))
              ? '100755'
              : '100644';
        return `${mode} ${oid}\t${quote(f.path)}\n`;
      })
      .join('');
    // the files into the index, its tree, and HEAD's tree to compare it with, in one sh again
    const [tree, headTree] = (
      await gitSteps(
        root,
        [
          ['update-index', '--index-info'],
          ['write-tree'],
          ...(parent ? [['rev-parse', `${parent}^{tree}`]] : []),
        ],
        { env, input: entries },
      )
    ).stdout
      .toString('utf8')
      .split('\n');
    if (parent && tree === headTree) return { status: 'unchanged' };
    const commit = await gitText(root, ['commit-tree', tree!, ...(parent ? ['-p', parent] : []), '-F', '-'], {
      input: c.message,
    });
    // HEAD moved to it (compare-and-swap), then the real index: these files' entries only. A missing index
    // stays missing, except on a branch that was unborn: there it meant "nothing staged", and left missing it
    // would now stage the files' deletion.
    const moveHead = ['update-ref', '-m', c.reflog, 'HEAD', commit, parent ?? ''];
    if (pathExists(realIndex) || parent === null)
      await gitSteps(root, [moveHead, ['update-index', '--index-info']], { input: entries });
    else await git(root, moveHead);
    return { status: 'committed', commit };
  } finally {
    rmSync(index, { force: true });
    rmSync(`${index}.lock`, { force: true });
  }
}

function executable(file: string): boolean {
  try {
    return (statSync(file).mode & 0o111) !== 0;
  } catch {
    return false;
  }
}
