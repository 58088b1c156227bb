// Whether a check record still speaks for today (pure): it is current only while the receipt it
// checked, the checker's binding and the tree it ran on (HEAD's) are those of today. Staleness is
// computed from these digests whenever asked, never stored, so no record can claim to be current.
// Of several records for one job and checker, the newest current one speaks; else the newest.

export type StaleReason = 'receipt' | 'binding' | 'base';

export interface RecordFacts {
  receipt_sha256: string;
  binding_sha256: string;
  base_tree: string;
}

/** Today's digests; null where there is none (no receipt, checker no longer declared, no HEAD). */
export interface Today {
  receipt_sha256: string | null;
  binding_sha256: string | null;
  base_tree: string | null;
}

/** Why `r` is not current today, or undefined when it is. */
export function staleness(r: RecordFacts, today: Today): StaleReason | undefined {
  if (r.receipt_sha256 !== today.receipt_sha256) return 'receipt';
  if (r.binding_sha256 !== today.binding_sha256) return 'binding';
  if (r.base_tree !== today.base_tree) return 'base';
  return undefined;
}

export interface Ordered {
  sequence: number;
  finished_at: string;
  digest: string;
}

/** Newer first: a higher sequence, then a later finish, then the larger digest (any fixed order will do). */
export function newerFirst(a: Ordered, b: Ordered): number {
  if (a.sequence !== b.sequence) return b.sequence - a.sequence;
  // Stryker disable next-line EqualityOperator: `<=` differs from `<` only for equal times, which the line's guard excludes
  if (a.finished_at !== b.finished_at) return a.finished_at < b.finished_at ? 1 : -1;
  return a.digest < b.digest ? 1 : a.digest > b.digest ? -1 : 0;
}

/** The record that speaks for today: the newest current one, else the newest; undefined when there are none. */
export function speaking<T extends Ordered & RecordFacts>(
  records: readonly T[],
  today: Today,
): T | undefined {
  const sorted = [...records].sort(newerFirst);
  return sorted.find((r) => staleness(r, today) === undefined) ?? sorted[0];
}
