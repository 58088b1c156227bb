// The merge gate (`verify --commits RANGE`): every commit in RANGE carrying a Genjob-Key trailer must
// name a receipt that is here (after `genjob pull`), passes every verify rule under the trust policy
// and has the digest its Genjob-Receipt trailer names; and the commit's changes against its first
// parent must be exactly the receipt's outputs, byte for byte (a path added, removed or a byte
// edited by hand fails). Commits without the trailer are people's, unless --require-genjob names paths.
import { GenjobError, UsageError } from '../core/errors.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { sha256Hex } from '../core/sha256.js';
import type { Store } from '../store/store.js';
import { type Verified, verifyKey } from '../verify/verify-key.js';
import { catFile } from './cat-file.js';
import { git } from './run-git.js';
import { type CommitTrailers, parseTrailerLog, TRAILER_FORMAT } from './trailers.js';

export interface CommitCheck {
  commit: string;
  key: string | null;
  ok: boolean;
  code?: `EGJ_${string}`;
  message?: string;
  outputs?: number;
  signer?: string | null;
}

class GateFailure extends Error {
  constructor(
    readonly code: `EGJ_${string}`,
    message: string,
  ) {
    super(message);
  }
}

/** RANGE as rev-list arguments: whitespace-separated revisions; the only options are --not, --remotes, --branches, --tags. */
export function rangeArgs(range: string): string[] {
  const args = range.split(/\s+/).filter(Boolean);
  if (args.length === 0) throw new UsageError('EGJ_USAGE', '--commits: the range is empty');
  for (const a of args)
    if (a.startsWith('-') && !/^--(not|remotes|branches|tags)(=[^=]*)?$/.test(a))
      throw new UsageError(
        'EGJ_USAGE',
        `--commits: ${JSON.stringify(a)}: a range holds revisions (and --not, --remotes=, --branches=), no other options`,
      );
  return args;
}

export interface GateOptions {
  range: string;
  requireGenjob?: readonly string[];
  policy: ReceiptTrustPolicy;
  /** Stop at the first failure (false: check every commit, for --json). */
  stopAtFirst: boolean;
}

/** Check the range, oldest first. Returns one entry per checked commit. */
export async function checkCommits(store: Store, o: GateOptions): Promise<CommitCheck[]> {
  const root = store.root;
  const revs = rangeArgs(o.range);
  const log = await git(root, ['log', '-z', '--reverse', `--format=${TRAILER_FORMAT}`, ...revs, '--']);
  const commits = parseTrailerLog(log.stdout.toString('utf8'));
  const protectedCommits = new Set<string>();
  if (o.requireGenjob && o.requireGenjob.length > 0) {
    const r = await git(root, ['log', '--no-merges', '--format=%H', ...revs, '--', ...o.requireGenjob]);
    for (const c of r.stdout.toString('utf8').split('\n')) if (c) protectedCommits.add(c);
  }
  const checks: CommitCheck[] = [];
  for (const c of commits) {
    if (c.keys.length === 0 && !protectedCommits.has(c.commit)) continue;
    let check: CommitCheck;
    try {
      check = await checkOne(store, c, o.policy);
    } catch (err) {
      if (!(err instanceof GateFailure)) throw err;
      check = { commit: c.commit, key: c.keys[0] ?? null, ok: false, code: err.code, message: err.message };
    }
    checks.push(check);
    if (!check.ok && o.stopAtFirst) break;
  }
  return checks;
}

async function checkOne(store: Store, c: CommitTrailers, policy: ReceiptTrustPolicy): Promise<CommitCheck> {
  const fail = (code: `EGJ_${string}`, msg: string): never => {
    throw new GateFailure(code, msg);
  };
  if (c.keys.length === 0)
    fail(
      'EGJ_COMMIT_NOT_GENERATED',
      'touches a path given to --require-genjob but has no Genjob-Key trailer',
    );
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
  // the receipt: here, and passing every verify rule under the trust policy
  let v: Verified;
  try {
    v = await verifyKey(store, key, policy);
  } catch (err) {
    if (!(err instanceof GenjobError) || err.code === 'EGJ_IO') throw err;
    if (err.code === 'EGJ_NOT_RECEIVED' || err.code === 'EGJ_RECEIPT_MISSING')
      fail(
        'EGJ_COMMIT_RECEIPT_MISSING',
        `no receipt for job ${key.slice(0, 12)} here (run genjob pull first)`,
      );
    fail(err.code, `receipt of job ${key.slice(0, 12)}: ${err.message}`);
  }
  v = v!;
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
  await checkChanges(store.root, c, v.receipt.outputs, fail);
  return { commit: c.commit, key, ok: true, outputs: v.receipt.outputs.length, signer: v.signer };
}

interface RawChange {
  newMode: string;
  newOid: string;
  status: string;
  path: string;
}

/** Parse `git diff-tree -r -z --raw` output: ":om nm oo no S\0path\0" per change (no renames). */
function parseRaw(out: Buffer): RawChange[] {
  const parts = out.toString('utf8').split('\0');
  const changes: RawChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const m = /^:(\d+) (\d+) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])\d*$/.exec(parts[i]!.replace(/^\n/, ''));
    if (!m) throw new Error(`git diff-tree: unexpected line ${JSON.stringify(parts[i])}`);
    changes.push({ newMode: m[2]!, newOid: m[4]!, status: m[5]!, path: parts[i + 1]! });
  }
  return changes;
}

/** The commit's changes against its first parent are exactly the outputs, each with the receipt's bytes. */
async function checkChanges(
  root: string,
  c: CommitTrailers,
  outputs: ReadonlyArray<{ path: string; sha256: string }>,
  fail: (code: `EGJ_${string}`, msg: string) => never,
): Promise<void> {
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
  const want = new Map(outputs.map((o) => [o.path, o.sha256]));
  const changes = parseRaw(diff.stdout);
  for (const ch of changes) {
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
    if (ch.newMode !== '100644' && ch.newMode !== '100755')
      fail(
        'EGJ_COMMIT_EXTRA_CHANGE',
        `output ${JSON.stringify(ch.path)} has mode ${ch.newMode}, not a regular file`,
      );
  }
  // every output's bytes as the commit holds them (changed or not), read in one cat-file
  const blobs = await catFile(
    root,
    outputs.map((o) => `${c.commit}:${o.path}`),
    { contents: true },
  );
  for (const [i, o] of outputs.entries()) {
    const blob = blobs[i];
    if (blob?.type !== 'blob' || blob.content === undefined)
      return fail(
        'EGJ_COMMIT_OUTPUT_MISSING',
        `does not hold output ${JSON.stringify(o.path)} of its receipt`,
      );
    const actual = sha256Hex(blob.content);
    if (actual !== o.sha256)
      fail(
        'EGJ_COMMIT_BYTES_DIFFER',
        `${JSON.stringify(o.path)} hashes to ${actual.slice(0, 12)} in the commit, the receipt says ${o.sha256.slice(0, 12)}`,
      );
  }
}
