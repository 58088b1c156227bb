// The merge gate (`verify --commits RANGE`), judging each commit of RANGE, oldest first, by what it changes
// itself (against its first parent; a merge against the automatic merge of its parents):
//   - nothing under .gen/, under any spelling a checkout folds to it (the gate never reads it; a branch that
//     ships genjob state is refused);
//   - a commit with a Genjob-Key trailer is a generated one: its material, from refs/genjob/ only
//     (gate-material.ts), passes every verify rule under the trust policy (taken from outside the range:
//     gate-policy.ts) and is the receipt its Genjob-Receipt names; its parent holds exactly the job's
//     inputs (a receipt replayed on other history fails); and it changes exactly the receipt's outputs,
//     byte for byte, with the mode the receipt gives;
//     a generated commit that passes says how many hidden characters (bidi controls, invisible code
//     points) its outputs add and what new runs of tag characters spell, for the reviewer to look at:
//     a warning, not a verdict;
//   - any other commit is a person's: under --require-genjob it may touch neither the paths named nor a
//     policy file (genjob-trust.json); without it, a policy change is only reported.
import { GenjobError } from '../core/errors.js';
import { hiddenAdded } from '../core/hidden-chars.js';
import type { Job } from '../core/job.js';
import type { ReceiptOutput } from '../core/receipt.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { sha256Hex } from '../core/sha256.js';
import { automaticMergeTree, changesPaths } from './automatic-merge.js';
import { type JudgedMaterial, judgeMaterial, loadKeyMaterial } from './gate-material.js';
import { POLICY_FILES, rangeArgs } from './gate-policy.js';
import { pinRangeArgs } from './gate-revision.js';
import { staleInput } from './minted-base.js';
import { inGenDir, isPolicyAlias } from './path-aliases.js';
import type { ReadOutcome } from './read-material.js';
import { git } from './run-git.js';
import { ScratchObjects } from './scratch-objects.js';
import { refuseShallowCut } from './shallow-range.js';
import { type CommitTrailers, parseTrailerLog, TRAILER_FORMAT } from './trailers.js';
import { isRegularMode, outputMode, type TreeEntryAt, treeEntries } from './tree-entries.js';

export interface CommitCheck {
  commit: string;
  key: string | null;
  ok: boolean;
  code?: `EGJ_${string}`;
  message?: string;
  outputs?: number;
  signer?: string | null;
  /** The sha256 of the receipt the commit was verified against (a generated commit that passed). */
  receipt?: string;
  /** The commit changes a policy file (genjob-trust.json): reported, never used by this gate. */
  changes_policy?: true;
  /** How many more hidden characters its outputs hold than its parent held at their paths, when any. */
  hidden_added?: number;
  /** The text each new run of tag characters in its outputs spells, when any. */
  hidden_tags?: string[];
}

class GateFailure extends Error {
  constructor(
    readonly code: `EGJ_${string}`,
    message: string,
  ) {
    super(message);
  }
}

type Fail = (code: `EGJ_${string}`, msg: string) => never;

const fail: Fail = (code, msg) => {
  throw new GateFailure(code, msg);
};

export interface GateOptions {
  range: string;
  requireGenjob?: readonly string[];
  policy: ReceiptTrustPolicy;
  /** The policy files this gate reads from outside the range (default POLICY_FILES): a commit changing one is reported. */
  policyFiles?: readonly string[];
  /** Stop at the first failure (false: check every commit, for --json). */
  stopAtFirst: boolean;
}

/** What a commit changes itself, by the paths the rules care about. */
interface OwnChanges {
  genDir: boolean;
  policy: boolean;
  protected: boolean;
}

/** Check the range, oldest first. Returns one entry per commit the rules had something to say about. */
export async function checkCommits(root: string, o: GateOptions): Promise<CommitCheck[]> {
  // every revision pinned to its commit id, as the policy's base was: the branch cannot re-point a name
  const revs = await pinRangeArgs(root, rangeArgs(o.range));
  const log = await git(root, ['log', '-z', '--reverse', `--format=${TRAILER_FORMAT}`, ...revs, '--']);
  const commits = parseTrailerLog(log.stdout.toString('utf8'));
  // a shallow clone's history may end inside the range, hiding the commits below from this walk
  await refuseShallowCut(
    root,
    o.range,
    commits.map((c) => c.commit),
  );
  const protect = o.requireGenjob ?? [];
  // the non-merge commits touching the paths given to --require-genjob (a merge is judged on its own below)
  const touching = async (pathspecs: readonly string[]) => {
    const r = await git(root, [
      'log',
      '--no-merges',
      '--full-history',
      '--format=%H',
      ...revs,
      '--',
      ...pathspecs,
    ]);
    return new Set(r.stdout.toString('utf8').split('\n'));
  };
  const policyFiles = o.policyFiles ?? POLICY_FILES;
  const { genDir, policy } = await genjobPaths(root, revs, policyFiles);
  const protectedCommits = protect.length > 0 ? await touching(protect) : new Set<string>();
  const material = await loadKeyMaterial(root, new Set(commits.flatMap((c) => c.keys)));
  const checks: CommitCheck[] = [];
  // the automatic merges are written outside the repository, gone however the walk ends
  const scratch = new ScratchObjects(root);
  try {
    await judgeAll();
  } finally {
    scratch.dispose();
  }
  return checks;

  async function judgeAll(): Promise<void> {
    for (const c of commits) {
      const own: OwnChanges =
        c.parents.length > 1
          ? await mergeOwnChanges(root, c, protect, policyFiles, scratch)
          : {
              genDir: genDir.has(c.commit),
              policy: policy.has(c.commit),
              protected: protectedCommits.has(c.commit),
            };
      let check: CommitCheck | null;
      try {
        check = await checkOne(root, c, own, { ...o, material, requireGenjob: protect, policyFiles });
      } catch (err) {
        if (!(err instanceof GateFailure)) throw err;
        check = { commit: c.commit, key: c.keys[0] ?? null, ok: false, code: err.code, message: err.message };
      }
      if (check === null) continue;
      checks.push(check);
      if (!check.ok && o.stopAtFirst) break;
    }
  }
}

/**
 * The non-merge commits of the range that change a path in .gen/, or a policy file, under any spelling a
 * checkout may fold to them (path-aliases.ts), from one walk listing every commit's changed paths. In
 * `--raw -z` output a path always follows its `:<modes> <ids> <status>` field, and what follows a path
 * is either the next such field or the next commit's id: no path can pass for a commit.
 */
async function genjobPaths(
  root: string,
  revs: readonly string[],
  policyFiles: readonly string[],
): Promise<{ genDir: Set<string>; policy: Set<string> }> {
  const r = await git(root, [
    'log',
    '--no-merges',
    '--root',
    '--raw',
    '-z',
    '--no-renames',
    '--no-abbrev',
    '--relative',
    '--format=%H',
    ...revs,
    '--',
  ]);
  const genDir = new Set<string>();
  const policy = new Set<string>();
  const fields = r.stdout.toString('utf8').split('\0');
  let commit = '';
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!.replace(/^\n/, '');
    if (f.startsWith(':')) {
      const path = fields[++i];
      if (path === undefined) throw new Error('git log --raw: a change without its path');
      if (inGenDir(path)) genDir.add(commit);
      if (isPolicyAlias(path, policyFiles)) policy.add(commit);
    } else if (/^[0-9a-f]{40,64}$/.test(f)) commit = f;
    else if (f !== '') throw new Error(`git log --raw: unexpected field ${JSON.stringify(f.slice(0, 80))}`);
  }
  return { genDir, policy };
}

/** A merge's own changes: where its tree differs from the automatic merge of its parents. */
async function mergeOwnChanges(
  root: string,
  c: CommitTrailers,
  protect: readonly string[],
  policyFiles: readonly string[],
  scratch: ScratchObjects,
): Promise<OwnChanges> {
  const auto = await automaticMergeTree(c.parents, scratch);
  const names = await git(
    root,
    ['diff-tree', '-r', '-z', '--name-only', '--no-renames', '--relative', auto, c.commit],
    { env: await scratch.reading() },
  );
  const paths = names.stdout
    .toString('utf8')
    .split('\0')
    .filter((p) => p !== '');
  return {
    genDir: paths.some(inGenDir),
    policy: paths.some((p) => isPolicyAlias(p, policyFiles)),
    protected: protect.length > 0 && (await changesPaths(root, auto, c.commit, protect, scratch)),
  };
}

interface JudgeContext {
  policy: ReceiptTrustPolicy;
  requireGenjob: readonly string[];
  policyFiles: readonly string[];
  material: ReadonlyMap<string, ReadOutcome[]>;
}

/** The verdict on one commit, or null for a person's commit no rule applies to. Throws GateFailure. */
async function checkOne(
  root: string,
  c: CommitTrailers,
  own: OwnChanges,
  o: JudgeContext,
): Promise<CommitCheck | null> {
  const merge = c.parents.length > 1;
  if (own.genDir)
    fail(
      'EGJ_COMMIT_GEN_DIR',
      `${merge ? 'beyond the automatic merge of its parents, it ' : ''}changes files under .gen/; genjob's state never travels in commits (the gate reads material from refs/genjob/ only)`,
    );
  const flagged = own.policy ? { changes_policy: true as const } : {};
  if (c.keys.length > 0) return { ...(await checkGenerated(root, c, o)), ...flagged };
  if (own.policy && o.requireGenjob.length > 0)
    fail(
      'EGJ_COMMIT_POLICY_CHANGE',
      `changes ${o.policyFiles.join(' or ')} but has no Genjob-Key trailer; under --require-genjob a policy change passes only as a generated commit verified under the policy of the range's base`,
    );
  if (own.protected)
    fail(
      'EGJ_COMMIT_NOT_GENERATED',
      merge
        ? 'beyond the automatic merge of its parents, it touches a path given to --require-genjob'
        : 'touches a path given to --require-genjob but has no Genjob-Key trailer',
    );
  return own.policy ? { commit: c.commit, key: null, ok: true, ...flagged } : null;
}

async function checkGenerated(root: string, c: CommitTrailers, o: JudgeContext): Promise<CommitCheck> {
  if (c.keys.length > 1 || c.receipts.length !== 1 || c.signers.length > 1)
    fail(
      'EGJ_COMMIT_TRAILER',
      'needs exactly one Genjob-Key and one Genjob-Receipt trailer (and at most one Genjob-Signer)',
    );
  const key = c.keys[0]!;
  if (!/^[0-9a-f]{64}$/.test(key))
    fail('EGJ_COMMIT_TRAILER', `Genjob-Key ${JSON.stringify(key)} is not a key`);
  const named = /^sha256:([0-9a-f]{64})$/.exec(c.receipts[0]!)?.[1];
  if (!named)
    fail('EGJ_COMMIT_TRAILER', `Genjob-Receipt ${JSON.stringify(c.receipts[0])} is not sha256:<64 hex>`);
  const v = judgeKey(key, named!, o);
  if (v.receiptSha256 !== named)
    fail(
      'EGJ_COMMIT_RECEIPT_MISMATCH',
      `Genjob-Receipt names sha256:${named!.slice(0, 12)}, the receipt of job ${key.slice(0, 12)} here is sha256:${v.receiptSha256.slice(0, 12)}`,
    );
  const signer = c.signers[0];
  if (signer !== undefined && signer !== v.signer)
    fail(
      'EGJ_COMMIT_SIGNER_MISMATCH',
      `Genjob-Signer names ${JSON.stringify(signer)}, but the receipt of job ${key.slice(0, 12)} ${v.signer ? `verified against ${JSON.stringify(v.signer)}` : 'verified against no pinned key'}`,
    );
  const base = await checkBase(root, c, v.job);
  const hidden = await checkChanges(root, c, v.receipt.outputs, base);
  return {
    commit: c.commit,
    key,
    ok: true,
    outputs: v.receipt.outputs.length,
    signer: v.signer,
    receipt: v.receiptSha256,
    ...(hidden.count > 0 ? { hidden_added: hidden.count } : {}),
    // what each new run spells: a run of escapes or code points is not something a reviewer can read
    ...(hidden.tags.length > 0 ? { hidden_tags: hidden.tags } : {}),
  };
}

/** The key's material that passes every verify rule: the one whose receipt the trailer names, else the first. */
function judgeKey(key: string, named: string, o: JudgeContext): JudgedMaterial {
  const found = o.material.get(key) ?? [];
  if (found.length === 0)
    fail(
      'EGJ_COMMIT_RECEIPT_MISSING',
      `no receipt for job ${key.slice(0, 12)} here (run genjob pull first; a ref of it that pull skipped is named in pull's warnings)`,
    );
  const usable = found.flatMap((f) => (f.ok ? [f.material] : []));
  if (usable.length === 0) {
    const bad = found[0] as Extract<ReadOutcome, { ok: false }>;
    fail('EGJ_COMMIT_MATERIAL_INVALID', `${bad.ref}: ${bad.rule}`);
  }
  const m = usable.find((u) => sha256Hex(u.receipt) === named) ?? usable[0]!;
  try {
    return judgeMaterial(m, o.policy);
  } catch (err) {
    if (!(err instanceof GenjobError)) throw err;
    return fail(err.code, `receipt of job ${key.slice(0, 12)}: ${err.message}`);
  }
}

/** The commit's parent holds exactly the job's inputs and read files (absent where it creates a file). Returns the parent's entries. */
async function checkBase(
  root: string,
  c: CommitTrailers,
  job: Job,
): Promise<ReadonlyMap<string, TreeEntryAt | null>> {
  const { stale, entries } = await staleInput(root, c.parents[0] ?? null, job);
  if (stale !== null)
    fail(
      'EGJ_COMMIT_STALE_BASE',
      `${JSON.stringify(stale.path)}: the job was minted where it was ${stale.minted === null ? 'absent' : `sha256 ${stale.minted.slice(0, 12)}`}, the commit's parent has ${stale.held}; a receipt applies only on the history it was made for`,
    );
  return entries;
}

export interface RawChange {
  newMode: string;
  newOid: string;
  status: string;
  path: string;
}

/** Parse `git diff-tree -r -z --raw` output: ":om nm oo no S\0path\0" per change (no renames); any other line throws. */
export function parseRaw(out: Buffer): RawChange[] {
  const parts = out.toString('utf8').split('\0');
  const changes: RawChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const m = /^:(\d+) (\d+) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])\d*$/.exec(parts[i]!.replace(/^\n/, ''));
    if (!m) throw new Error(`git diff-tree: unexpected line ${JSON.stringify(parts[i])}`);
    changes.push({ newMode: m[2]!, newOid: m[4]!, status: m[5]!, path: parts[i + 1]! });
  }
  return changes;
}

/**
 * The commit's changes against its first parent are exactly the outputs, each with the receipt's bytes and
 * mode. Returns how many hidden characters the outputs add to what the parent held at their paths, and
 * the text of the new runs of tag characters among them.
 */
async function checkChanges(
  root: string,
  c: CommitTrailers,
  outputs: readonly ReceiptOutput[],
  parent: ReadonlyMap<string, TreeEntryAt | null>,
): Promise<{ count: number; tags: string[] }> {
  const base = c.parents[0];
  const diff = await git(root, [
    'diff-tree',
    '-r',
    '-z',
    '--raw',
    '--no-renames',
    '--no-commit-id',
    '--no-ext-diff',
    ...(base ? [base, c.commit] : ['--root', c.commit]),
  ]);
  const want = new Set(outputs.map((o) => o.path));
  for (const ch of parseRaw(diff.stdout)) {
    if (!want.has(ch.path))
      fail(
        'EGJ_COMMIT_EXTRA_CHANGE',
        `changes ${JSON.stringify(ch.path)}, which is not an output of its receipt`,
      );
    if (ch.status !== 'A' && ch.status !== 'M')
      fail(
        'EGJ_COMMIT_EXTRA_CHANGE',
        `${ch.status === 'D' ? 'deletes' : 'changes the type of'} output ${JSON.stringify(ch.path)}`,
      );
    if (!isRegularMode(ch.newMode))
      fail(
        'EGJ_COMMIT_EXTRA_CHANGE',
        `output ${JSON.stringify(ch.path)} has mode ${ch.newMode}, not a regular file`,
      );
  }
  // every output as the commit holds it (changed or not): bytes and mode
  const hidden = { count: 0, tags: [] as string[] };
  const entries = await treeEntries(
    root,
    c.commit,
    outputs.map((o) => o.path),
    { contents: true },
  );
  for (const o of outputs) {
    const e = entries.get(o.path);
    if (e?.bytes === undefined)
      fail('EGJ_COMMIT_OUTPUT_MISSING', `does not hold output ${JSON.stringify(o.path)} of its receipt`);
    const actual = sha256Hex(e!.bytes!);
    if (actual !== o.sha256)
      fail(
        'EGJ_COMMIT_BYTES_DIFFER',
        `${JSON.stringify(o.path)} hashes to ${actual.slice(0, 12)} in the commit, the receipt says ${o.sha256.slice(0, 12)}`,
      );
    const mode = outputMode(o.executable, parent.get(o.path)?.mode);
    if (e!.mode !== mode)
      fail(
        'EGJ_COMMIT_MODE_DIFFERS',
        `output ${JSON.stringify(o.path)} has mode ${e!.mode} in the commit; ${o.executable ? 'its receipt makes it executable (100755)' : `its receipt leaves the mode as it was (${mode})`}`,
      );
    const added = hiddenAdded(parent.get(o.path)?.bytes, e!.bytes!);
    hidden.count += added.count;
    hidden.tags.push(...added.tags);
  }
  return hidden;
}
