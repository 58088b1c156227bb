// `verify --commits RANGE --require-check NAME`: after the merge gate has held each generated commit to
// its receipt, each must also have, for every named checker, a current `pass` record made on exactly
// its tree: the record's receipt digest is the commit's verified receipt, its `base_tree` the tree of
// the commit's first parent, its `result_tree` the commit's own tree, and its binding the checker's as
// the gate's policy commit (the range's base) declares it, with the pinned files and rubric as the
// parent holds them. Records come from refs only (this clone's refs/genjob/checks/, pull's mirror), and
// are signed by a key the gate's trust policy pins for checks, when it pins one: the branch under
// review can neither redefine a checker nor pin its own signer.
import { CONFIG_FILE } from '../cli/config-file.js';
import { UsageError } from '../core/errors.js';
import type { TrustedKey } from '../core/receipt-envelope.js';
import { type PolicySource, readPolicyFile, sourceAtTip } from '../git/gate-policy.js';
import { gitText } from '../git/run-git.js';
import { bindingDigest, boundFiles } from './binding.js';
import { CHECK_REFS, PULLED_CHECK_REFS, type RefRecord, recordsUnder } from './check-refs.js';
import { type Checker, parseCheckers } from './checker.js';
import { type CheckFacts, decodeRecord } from './record.js';
import { type Refusal, refusalOf } from './require-check.js';
import { newerFirst, staleness } from './staleness.js';

/** What the gate needs of one checked commit (src/git/commit-gate.ts's CommitCheck). */
export interface GatedCommit {
  commit: string;
  key: string | null;
  ok: boolean;
  code?: `EGJ_${string}`;
  message?: string;
  /** The sha256 of the receipt the gate verified the commit against. */
  receipt?: string;
}

/** The named checkers as the gate's policy commit declares them in its genjob.config.json. */
async function checkersAt(root: string, source: PolicySource, names: readonly string[]): Promise<Checker[]> {
  const file = await readPolicyFile(root, source, CONFIG_FILE, 'EGJ_CONFIG');
  const where = file?.where ?? `${source.label}: ${CONFIG_FILE}`;
  let raw: { checkers?: Record<string, unknown> } = {};
  if (file !== undefined) {
    try {
      raw = JSON.parse(file.bytes.toString('utf8'));
    } catch (err) {
      throw new UsageError('EGJ_CONFIG', `${where}: not JSON (${(err as Error).message})`);
    }
  }
  const declared = parseCheckers(raw?.checkers, where);
  return names.map((n) => {
    const c = declared.find((d) => d.name === n);
    if (!c)
      throw new UsageError(
        'EGJ_CHECKER_UNKNOWN',
        // the label names the commit already (`the range's base 1a2b…`); say whether the file is there at all
        file === undefined
          ? `--require-check ${n}: ${source.label} has no ${CONFIG_FILE}, so it declares no checker (the gate reads checkers from there, never from the branch)`
          : `--require-check ${n}: ${where} (${source.label}) declares no such checker (${declared.length > 0 ? `it declares ${declared.map((d) => d.name).join(', ')}` : 'it declares none'})`,
      );
    return c;
  });
}

/** One key's records of one checker, from refs, decoded under the keys pinned for checks. */
function recordsOf(
  found: readonly RefRecord[],
  checker: string,
  trusted: readonly TrustedKey[],
): { records: Array<CheckFacts & { digest: string }>; ignored: Array<{ file: string; why: string }> } {
  const out = {
    records: [] as Array<CheckFacts & { digest: string }>,
    ignored: [] as Array<{ file: string; why: string }>,
  };
  const seen = new Set<string>();
  for (const r of found) {
    if (r.checker !== checker || seen.has(r.digest)) continue;
    seen.add(r.digest);
    try {
      out.records.push({ ...decodeRecord(r.bytes, r.ref, trusted).facts, digest: r.digest });
    } catch (err) {
      out.ignored.push({ file: r.ref, why: (err as Error).message.replace(`${r.ref}: `, '') });
    }
  }
  return out;
}

/** Why `commit` (of job `key`) lacks a current pass of `checker` on its tree, or null when it has one. */
async function refusalFor(
  root: string,
  c: GatedCommit,
  checker: Checker,
  found: readonly RefRecord[],
  trusted: readonly TrustedKey[],
): Promise<(Refusal & { digest?: undefined }) | { digest: string }> {
  const commit = c.commit;
  const parent = await gitText(root, ['rev-parse', '--verify', '-q', `${commit}^1`]).catch(() => '');
  const tree = await gitText(root, ['rev-parse', `${commit}^{tree}`]);
  const today = {
    receipt_sha256: c.receipt ?? null,
    binding_sha256: parent ? bindingDigest(checker, await boundFiles(root, parent, checker)) : null,
    base_tree: parent ? await gitText(root, ['rev-parse', `${parent}^{tree}`]) : null,
  };
  const listing = recordsOf(found, checker.name, trusted);
  const sorted = [...listing.records].sort(newerFirst);
  const fits = sorted.find((r) => staleness(r, today) === undefined && r.result_tree === tree);
  const ignored = listing.ignored.length > 0 ? { ignored: listing.ignored } : {};
  if (fits) {
    const refusal = refusalOf(
      {
        checker: checker.name,
        verdict: fits.verdict,
        current: true,
        recordDigest: fits.digest,
        marks: fits.marks,
      },
      false,
    );
    return refusal ?? { digest: fits.digest };
  }
  const newest = sorted.find((r) => staleness(r, today) === undefined) ?? sorted[0];
  if (newest === undefined)
    return refusalOf({ checker: checker.name, verdict: 'missing', current: false, ...ignored }, false)!;
  const stale = staleness(newest, today);
  if (stale === undefined || stale === 'base')
    return {
      code: 'EGJ_CHECK_STALE',
      message: `${checker.name}: record ${newest.digest.slice(0, 12)} was made for another tree (${newest.result_tree.slice(0, 12)}, on ${newest.base_tree.slice(0, 12)}); this commit's tree is ${tree.slice(0, 12)}, on ${today.base_tree?.slice(0, 12) ?? 'no parent'}`,
    };
  return refusalOf(
    {
      checker: checker.name,
      verdict: newest.verdict,
      current: false,
      stale,
      recordDigest: newest.digest,
      marks: newest.marks,
    },
    false,
  )!;
}

/** What the check gate reads from outside the range: where the checkers are declared, whose signatures count. */
export interface CheckPolicy {
  /** The gate's policy commit (the range's base, or --trust-ref's): its genjob.config.json declares the checkers. */
  source: PolicySource;
  /** The keys the gate's trust policy pins for checks (none: records count unsigned). */
  trusted: readonly TrustedKey[];
}

/**
 * Hold every commit the gate passed to the named checkers; a commit that fails is marked not ok with
 * the refusal's code and message. Returns, per commit that passed, the records it passed on.
 */
export async function requireCommitChecks(
  root: string,
  commits: GatedCommit[],
  names: readonly string[],
  policy: CheckPolicy,
): Promise<Map<string, Array<{ name: string; digest: string }>>> {
  const passed = new Map<string, Array<{ name: string; digest: string }>>();
  const gated = commits.filter((c) => c.ok && c.key !== null);
  if (gated.length === 0) return passed;
  // for A...B, A's declarations: a branch forked before A made a checker stricter is held to A's command,
  // not the fork's (as A...B trusts a key only while A pins it)
  const checkers = await checkersAt(root, sourceAtTip(policy.source), names);
  const keys = new Set(gated.map((c) => c.key!));
  const found = new Map<string, RefRecord[]>();
  // this clone's own records first, then what pull fetched; a ref that is not what its name says is left out
  for (const under of [CHECK_REFS, PULLED_CHECK_REFS])
    for (const r of (await recordsUnder(root, under, keys)).records)
      found.set(r.key, [...(found.get(r.key) ?? []), r]);
  for (const c of gated) {
    const records: Array<{ name: string; digest: string }> = [];
    for (const checker of checkers) {
      const r = await refusalFor(root, c, checker, found.get(c.key!) ?? [], policy.trusted);
      if (r.digest === undefined) {
        Object.assign(c, { ok: false, code: r.code, message: `job ${c.key!.slice(0, 12)}: ${r.message}` });
        break;
      }
      records.push({ name: checker.name, digest: r.digest });
    }
    if (c.ok) passed.set(c.commit, records);
  }
  return passed;
}
