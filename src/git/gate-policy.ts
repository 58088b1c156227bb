// Where the merge gate's policy comes from: never from the range it judges. The policy files
// (genjob-trust.json, at the genjob root) are read from one commit outside the range — its base (A of
// A..B, the merge base of A...B), or the commit --trust-ref names — as git objects, not from the checkout,
// which is the branch under review. --trust-file PATH names the trust file itself. A range with no
// single base (several revisions, --not) needs one of the flags: guessing a base could pick the branch.
// The merge base of A...B is chosen by the branch too: forked before a leaked key was removed on A, it
// would take the policy that still pins that key. So A...B trusts a key only while A pins it as well.
import { readFileSync } from 'node:fs';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import type { ReceiptTrustPolicy, TrustedKey } from '../core/receipt-envelope.js';
import {
  parseTrust,
  TRUST_FILE,
  type TrustEntry,
  type TrustUse,
  trustedFor,
  trustPolicyOf,
} from '../trust/trust-file.js';
import { pinRevision } from './gate-revision.js';
import { git, gitText } from './run-git.js';
import { isRegularMode, treeEntries } from './tree-entries.js';

/** The files, relative to the genjob root, that make the gate's policy: a commit changing one is reported. */
export const POLICY_FILES: readonly string[] = [TRUST_FILE];

/** RANGE as rev-list arguments: whitespace-separated revisions; the only options are --not, --remotes, --branches, --tags. */
export function rangeArgs(range: string): string[] {
  const args = range.match(/\S+/g) ?? [];
  if (args.length === 0) throw new UsageError('EGJ_USAGE', '--commits: the range is empty');
  for (const a of args)
    if (a.startsWith('-') && !/^--(not|remotes|branches|tags)(=[^=]*)?$/.test(a))
      throw new UsageError(
        'EGJ_USAGE',
        `--commits: ${JSON.stringify(a)}: a range holds revisions (and --not, --remotes=, --branches=), no other options`,
      );
  return args;
}

/** The revisions a range's base is computed from: [A] for A..B, [A, B] for A...B (their merge base); null otherwise. */
export function rangeBase(range: string): string[] | null {
  const args = rangeArgs(range);
  if (args.length !== 1) return null;
  const [a] = args as [string];
  const three = a.indexOf('...');
  if (three >= 0) return [a.slice(0, three) || 'HEAD', a.slice(three + 3) || 'HEAD'];
  const two = a.indexOf('..');
  if (two >= 0) return [a.slice(0, two) || 'HEAD'];
  return null;
}

export interface PolicySource {
  /** The commit the policy files are read from; null when only --trust-file was given for a range without a base. */
  commit: string | null;
  /** A of A...B when it is not the merge base: a key is trusted only while this commit pins it too. */
  tip?: string;
  /** How that commit was chosen, for messages: `the range's base 1a2b3c4d5e6f`, `--trust-ref origin/main (…)`. */
  label: string;
  /** --trust-file: the trust file to use instead of the commit's. */
  trustFile: string | null;
}

export interface PolicyFlags {
  trustFile?: string;
  trustRef?: string;
}

async function commitOf(root: string, rev: string, what: string): Promise<string> {
  // pinned first: a name the branch could make mean another commit (a tag named origin/main) is refused
  const pinned = await pinRevision(root, rev, what);
  const r = await git(root, ['rev-parse', '-q', '--verify', '--end-of-options', `${pinned}^{commit}`], {
    okCodes: [1],
  });
  const oid = r.stdout.toString('utf8').trim();
  // Stryker disable next-line LogicalOperator,StringLiteral: git exits 1 with nothing on stdout, so `&&` or another text for the empty id refuses the same revisions
  if (r.code !== 0 || oid === '')
    throw new UsageError('EGJ_USAGE', `${what}: ${JSON.stringify(rev)} names no commit`);
  return oid;
}

/** The commit (or file) the gate of `range` takes its policy from; a range without a base and no flag is EGJ_USAGE. */
export async function gatePolicySource(
  root: string,
  range: string,
  flags: PolicyFlags,
): Promise<PolicySource> {
  const trustFile = flags.trustFile ?? null;
  if (flags.trustRef !== undefined) {
    const commit = await commitOf(root, flags.trustRef, '--trust-ref');
    return { commit, label: `--trust-ref ${flags.trustRef} (${commit.slice(0, 12)})`, trustFile };
  }
  const base = rangeBase(range);
  if (base === null) {
    if (trustFile !== null) return { commit: null, label: '--trust-file', trustFile };
    throw new UsageError(
      'EGJ_USAGE',
      `--commits ${JSON.stringify(range)}: the range has no single base to take the trust policy from; write it as BASE..TIP (or BASE...TIP), or give --trust-ref REF or --trust-file PATH`,
    );
  }
  const [a, b] = base as [string, string | undefined];
  const first = await commitOf(root, a, '--commits');
  if (b === undefined) return { commit: first, label: `the range's base ${first.slice(0, 12)}`, trustFile };
  const second = await commitOf(root, b, '--commits');
  const mb = await git(root, ['merge-base', first, second], { okCodes: [1] });
  const commit = mb.stdout.toString('utf8').trim();
  // Stryker disable next-line LogicalOperator,StringLiteral: git exits 1 with nothing on stdout, so `&&` or another text for the empty id refuses the same histories
  if (mb.code !== 0 || commit === '')
    throw new UsageError(
      'EGJ_USAGE',
      `--commits ${JSON.stringify(range)}: ${a} and ${b} have no merge base to take the trust policy from; give --trust-ref REF or --trust-file PATH`,
    );
  return {
    commit,
    label: `the range's merge base ${commit.slice(0, 12)}`,
    trustFile,
    ...(commit !== first ? { tip: first } : {}),
  };
}

/** For A...B, A itself as a policy source (the merge base is where the branch chose to fork); else `source`. */
export function sourceAtTip(source: PolicySource): PolicySource {
  if (source.tip === undefined) return source;
  return { commit: source.tip, label: `A of the range ${source.tip.slice(0, 12)}`, trustFile: null };
}

/** Where `name` (relative to the genjob root) sits in the repository's trees: the root's prefix from the top. */
async function repoPath(root: string, name: string): Promise<string> {
  return `${await gitText(root, ['rev-parse', '--show-prefix'])}${name}`;
}

/**
 * A policy file as the source's commit holds it: its bytes and where they came from (`<commit>:<path>`), or
 * undefined when the commit has no such file. A symlink or a directory there is refused (`code`, exit 2).
 */
export async function readPolicyFile(
  root: string,
  source: PolicySource,
  name: string,
  code: `EGJ_${string}`,
): Promise<{ bytes: Buffer; where: string } | undefined> {
  if (source.commit === null)
    throw new UsageError('EGJ_USAGE', `${name}: the gate reads it from a commit; give --trust-ref REF`);
  const path = await repoPath(root, name);
  const where = `${source.commit.slice(0, 12)}:${path}`;
  // with contents, a regular file's entry carries its bytes (one read of the tree, one of the blob)
  const entry = (await treeEntries(root, source.commit, [path], { contents: true })).get(path)!;
  if (entry === null) return undefined;
  if (!isRegularMode(entry.mode))
    throw new UsageError(code, `${where}: the policy file is not a regular file (mode ${entry.mode})`);
  return { bytes: entry.bytes!, where };
}

/** What the gate trusts: the keys pinned for receipts (as a policy) and those pinned for check records. */
export interface GateTrust {
  policy: ReceiptTrustPolicy;
  checkKeys: TrustedKey[];
  where: string;
}

function gateTrustOf(entries: readonly TrustEntry[], where: string, requireSignature?: boolean): GateTrust {
  return {
    policy: trustPolicyOf(entries, { requireSignature }),
    checkKeys: trustedFor(entries, 'checks'),
    where,
  };
}

/**
 * The keys for `use` that both the merge base and the tip pin (the tip's names), or those of the one that
 * pins any; `both` when each pins some, so that an empty answer means no key, not "accept unsigned".
 */
function pinnedAtBoth(
  base: readonly TrustEntry[],
  tip: readonly TrustEntry[],
  use: TrustUse,
): { keys: TrustedKey[]; both: boolean } {
  const b = trustedFor(base, use);
  const t = trustedFor(tip, use);
  if (b.length === 0 || t.length === 0) return { keys: b.length === 0 ? t : b, both: false };
  return { keys: t.filter((k) => b.some((x) => x.publicKey.equals(k.publicKey))), both: true };
}

/** The gate's trust for A...B: a key counts only while the merge base and A both pin it. */
function gateTrustOfBoth(
  base: readonly TrustEntry[],
  tip: readonly TrustEntry[],
  where: string,
  requireSignature?: boolean,
): GateTrust {
  const receipts = pinnedAtBoth(base, tip, 'receipts');
  const checks = pinnedAtBoth(base, tip, 'checks');
  return {
    // both pin keys but none in common: nothing unsigned passes, and nothing signed either
    policy: { trusted: receipts.keys, requireSignature: (requireSignature ?? false) || receipts.both },
    // a check record has no such flag: with no key in common, the tip's keys (A's policy, as for A..B)
    checkKeys: checks.both && checks.keys.length === 0 ? trustedFor(tip, 'checks') : checks.keys,
    where,
  };
}

/** The trust policy the gate uses: --trust-file's, else the source commit's genjob-trust.json (none there: no pinned key). */
export async function gateTrustPolicy(
  root: string,
  source: PolicySource,
  options: { requireSignature?: boolean } = {},
): Promise<GateTrust> {
  if (source.trustFile !== null) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(source.trustFile);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT')
        throw new UsageError('EGJ_USAGE', `--trust-file ${source.trustFile}: no such file`);
      throw IoError.wrap('read', source.trustFile, err);
    }
    return gateTrustOf(parseTrust(bytes, source.trustFile), source.trustFile, options.requireSignature);
  }
  const file = await readPolicyFile(root, source, TRUST_FILE, 'EGJ_TRUST_FILE');
  const entries = file === undefined ? [] : parseTrust(file.bytes, file.where);
  const where = file === undefined ? `${source.label} (no ${TRUST_FILE})` : file.where;
  if (source.tip === undefined) return gateTrustOf(entries, where, options.requireSignature);
  const tipSource = sourceAtTip(source);
  const tipFile = await readPolicyFile(root, tipSource, TRUST_FILE, 'EGJ_TRUST_FILE');
  const tip = tipFile === undefined ? [] : parseTrust(tipFile.bytes, tipFile.where);
  const tipWhere = tipFile === undefined ? `${tipSource.label} (no ${TRUST_FILE})` : tipFile.where;
  return gateTrustOfBoth(entries, tip, `${where} and ${tipWhere} (keys both pin)`, options.requireSignature);
}

/** The base trust policy of `range` in one call (the flags, then the base): what any gate over a range uses. */
export async function baseTrustPolicy(
  root: string,
  range: string,
  flags: PolicyFlags & { requireSignature?: boolean },
): Promise<GateTrust & { source: PolicySource }> {
  const source = await gatePolicySource(root, range, flags);
  return { ...(await gateTrustPolicy(root, source, { requireSignature: flags.requireSignature })), source };
}
