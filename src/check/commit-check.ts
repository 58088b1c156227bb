// `verify --commits RANGE --require-check NAME`: after the merge gate has held each generated commit to
// its receipt, each must also have, for every named checker, a current `pass` record made on exactly
// its tree: the record's receipt digest is the commit's receipt, its `base_tree` the tree of the
// commit's first parent, its `result_tree` the commit's own tree, and its binding the checker's as
// the range's base declares it (the branch under review may not redefine a checker) with the pinned
// files and rubric as the parent holds them. Signed by a key pinned for checks, when one is.
import { UsageError } from '../core/errors.js';
import type { TrustedKey } from '../core/receipt-envelope.js';
import { sha256Hex } from '../core/sha256.js';
import { catFile } from '../git/cat-file.js';
import { rangeArgs } from '../git/gate-policy.js';
import { gitText } from '../git/run-git.js';
import { readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { bindingDigest, boundFiles } from './binding.js';
import { checkKeys } from './check-trust.js';
import { type Checker, parseCheckers } from './checker.js';
import { listRecords } from './record-store.js';
import { type Refusal, refusalOf } from './require-check.js';
import { newerFirst, staleness } from './staleness.js';

/** What the gate needs of one checked commit (src/git/commit-gate.ts's CommitCheck). */
export interface GatedCommit {
  commit: string;
  key: string | null;
  ok: boolean;
  code?: `EGJ_${string}`;
  message?: string;
}

/** The commit the range is judged from: A of A..B, the merge base of A...B, else the parent of its oldest commit. */
export async function rangeBase(root: string, range: string): Promise<string> {
  const two = /^\s*([^\s.][^\s]*?)(\.\.\.?)([^\s.][^\s]*)?\s*$/.exec(range);
  try {
    if (two?.[2] === '..') return await gitText(root, ['rev-parse', '--verify', `${two[1]}^{commit}`]);
    if (two?.[2] === '...') return await gitText(root, ['merge-base', two[1]!, two[3] ?? 'HEAD']);
    const oldest = (await gitText(root, ['rev-list', '--reverse', ...rangeArgs(range)])).split('\n')[0];
    return await gitText(root, ['rev-parse', '--verify', `${oldest}^1`]);
  } catch (err) {
    throw new UsageError(
      'EGJ_USAGE',
      `--require-check: the range ${JSON.stringify(range)} has no base commit to read the checkers from (give A..B)`,
      { cause: err },
    );
  }
}

/** The checkers `base` declares in its genjob.config.json, the named ones only. */
async function checkersAt(root: string, base: string, names: readonly string[]): Promise<Checker[]> {
  const where = `${base.slice(0, 12)}:genjob.config.json`;
  const [blob] = await catFile(root, [`${base}:genjob.config.json`], { contents: true });
  let raw: { checkers?: Record<string, unknown> } = {};
  if (blob?.type === 'blob' && blob.content) {
    try {
      raw = JSON.parse(blob.content.toString('utf8'));
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
        `--require-check ${n}: the range's base ${where} declares no such checker`,
      );
    return c;
  });
}

/** Why `commit` (of job `key`) lacks a current pass of `checker` on its tree, or null when it has one. */
async function refusalFor(
  store: Store,
  commit: string,
  key: string,
  checker: Checker,
  trusted: readonly TrustedKey[],
): Promise<(Refusal & { digest?: undefined }) | { digest: string }> {
  const root = store.root;
  const parent = await gitText(root, ['rev-parse', '--verify', '-q', `${commit}^1`]).catch(() => '');
  const tree = await gitText(root, ['rev-parse', `${commit}^{tree}`]);
  const receipt = readIfExists(store, store.layout.receipt(key));
  const today = {
    receipt_sha256: receipt === undefined ? null : sha256Hex(receipt),
    binding_sha256: parent ? bindingDigest(checker, await boundFiles(root, parent, checker)) : null,
    base_tree: parent ? await gitText(root, ['rev-parse', `${parent}^{tree}`]) : null,
  };
  const listing = listRecords(store, key, checker.name, trusted);
  const sorted = listing.records.map((r) => ({ ...r.facts, digest: r.digest })).sort(newerFirst);
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

/**
 * Hold every commit the gate passed to the named checkers; a commit that fails is marked not ok with
 * the refusal's code and message. Returns, per commit that passed, the records it passed on.
 */
export async function requireCommitChecks(
  store: Store,
  range: string,
  commits: GatedCommit[],
  names: readonly string[],
): Promise<Map<string, Array<{ name: string; digest: string }>>> {
  const passed = new Map<string, Array<{ name: string; digest: string }>>();
  const gated = commits.filter((c) => c.ok && c.key !== null);
  if (gated.length === 0) return passed;
  const checkers = await checkersAt(store.root, await rangeBase(store.root, range), names);
  const trusted = checkKeys(store.root);
  for (const c of gated) {
    const records: Array<{ name: string; digest: string }> = [];
    for (const checker of checkers) {
      const r = await refusalFor(store, c.commit, c.key!, checker, trusted);
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
