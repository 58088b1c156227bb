// The state of a job's checks today, for every command that shows or gates on them (status, show,
// apply --require-check, the run gate, the report): per checker, the record that speaks (the newest
// current one, else the newest: staleness.ts), its verdict and whether it is current. Today's digests
// are gathered once per context: the receipt file's sha256, each checker's binding at HEAD (as the
// working tree's genjob.config.json declares it) and HEAD's tree.
import { GitFailedError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import type { TrustedKey } from '../core/receipt-envelope.js';
import { sha256Hex } from '../core/sha256.js';
import { gitText } from '../git/run-git.js';
import { readIfExists } from '../store/durable.js';
import { Store } from '../store/store.js';
import { bindingsAt } from './binding.js';
import { checkKeys } from './check-trust.js';
import { type Checker, loadCheckers } from './checker.js';
import { listRecords, type StoredRecord } from './record-store.js';
import { type StaleReason, speaking, staleness, type Today } from './staleness.js';
import type { Verdict } from './verdict.js';

export type { Verdict } from './verdict.js';

export interface CheckState {
  checker: string;
  /** 'missing' when no record exists for this key and checker */
  verdict: Verdict | 'missing';
  /** true only while the record's receipt digest, binding digest and base tree equal today's */
  current: boolean;
  /** why not current, when not: 'receipt' | 'binding' | 'base' */
  stale?: StaleReason;
  /** sha256 of the record file's bytes, when a record exists */
  recordDigest?: string;
  /** attempts as marks, e.g. '✗✓' */
  marks?: string;
  /** The pinned check key that signed the record (null: none asked for). */
  signer?: string | null;
  /** The tree the checker ran on (HEAD plus the job's outputs), when a record exists. */
  resultTree?: string;
  /** Record files left out (bytes not matching their name, undecodable, not signed by a pinned key). */
  ignored?: Array<{ file: string; why: string }>;
}

/** Today's digests for one repository, gathered once and shared by every job's states. */
export interface CheckContext {
  store: Store;
  checkers: Map<string, Checker>;
  /** Binding digest at HEAD per declared checker. */
  bindings: Map<string, string>;
  /** HEAD's tree, or null (no commit, not a git repository). */
  baseTree: string | null;
  trusted: readonly TrustedKey[];
}

/** HEAD's tree id, or null when there is no commit (or no git repository). */
export async function headTree(root: string): Promise<string | null> {
  try {
    return (await gitText(root, ['rev-parse', '-q', '--verify', 'HEAD^{tree}'])) || null;
  } catch (err) {
    // a disk that failed under git is said as such (exit 5), not taken for a repository without commits
    if (err instanceof GitFailedError && err.exitCode !== EXIT.IO) return null;
    throw err;
  }
}

/**
 * Today's digests for the checkers named in `only` (all declared: none named). `baseTree`: HEAD's tree as
 * the caller already read it (null: no commit), so what it then builds on HEAD and the digests agree;
 * `checkers`: the definitions the caller already read (and runs), so the bindings are of those, not of
 * genjob.config.json read again after it may have changed.
 */
export async function checkContext(
  root: string,
  only?: readonly string[],
  pinned?: { baseTree: string | null; checkers?: readonly Checker[] },
): Promise<CheckContext> {
  const store = new Store(root);
  const declared = (pinned?.checkers ?? loadCheckers(root)).filter(
    (c) => only === undefined || only.includes(c.name),
  );
  const baseTree = pinned ? pinned.baseTree : await headTree(root);
  return {
    store,
    checkers: new Map(declared.map((c) => [c.name, c])),
    bindings: baseTree === null ? new Map() : await bindingsAt(root, baseTree, declared),
    baseTree,
    trusted: checkKeys(root),
  };
}

/** Today's digests for `key` and `checker`. */
export function todayOf(ctx: CheckContext, key: string, checker: string): Today {
  const receipt = readIfExists(ctx.store, ctx.store.layout.receipt(key));
  return {
    receipt_sha256: receipt === undefined ? null : sha256Hex(receipt),
    binding_sha256: ctx.bindings.get(checker) ?? null,
    base_tree: ctx.baseTree,
  };
}

/** The state of one checker's records for `key` under `ctx`, with the record that speaks. */
export function stateOf(
  ctx: CheckContext,
  key: string,
  checker: string,
): CheckState & { record?: StoredRecord } {
  const listing = listRecords(ctx.store, key, checker, ctx.trusted);
  const ignored = listing.ignored.length > 0 ? { ignored: listing.ignored } : {};
  const today = todayOf(ctx, key, checker);
  const r = speaking(
    listing.records.map((rec) => ({
      ...rec.facts,
      digest: rec.digest,
      rec,
    })),
    today,
  );
  if (r === undefined) return { checker, verdict: 'missing', current: false, ...ignored };
  const stale = staleness(r, today);
  return {
    checker,
    verdict: r.verdict,
    current: stale === undefined,
    ...(stale === undefined ? {} : { stale }),
    recordDigest: r.digest,
    marks: r.marks,
    signer: r.rec.signer,
    resultTree: r.result_tree,
    ...ignored,
    record: r.rec,
  };
}

/** The newest record's state for each named checker of one job (root = repository root). */
export async function checkStates(
  root: string,
  key: string,
  checkers: readonly string[],
): Promise<CheckState[]> {
  const ctx = await checkContext(root, checkers);
  return checkers.map((c) => {
    const { record: _record, ...state } = stateOf(ctx, key, c);
    return state;
  });
}

/** A state in a few words for a table cell: `pass`, `fail (stale: base)`, `missing`. */
export function stateLabel(s: CheckState): string {
  return `${s.verdict}${s.stale ? ` (stale: ${s.stale})` : ''}`;
}

/** Does `s` match a `status --check NAME=VALUE` value: a verdict, `missing`, `stale` or `current`? */
export function stateMatches(s: CheckState, value: string): boolean {
  if (value === 'stale') return s.verdict !== 'missing' && !s.current;
  if (value === 'current') return s.current;
  return s.verdict === value;
}
