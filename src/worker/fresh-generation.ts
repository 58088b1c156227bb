// Which generation of a key a live attempt asks the host for. The host caches a result by (key,
// generator, job digest, plane) and answers every later request for it from there, so a job that must
// be generated anew — promoted from a shadow plane, or sent back by `genjob retry` — names a fresh
// generation: a digest of the promotion (the shadow receipt's digest) and of the retry (the epoch it
// came after). The host folds it into the entry's name, so the new run has an entry of its own, and
// every attempt after the same promotion or retry asks for the same one (a redelivery never spends twice).
import { sha256Hex } from '../core/sha256.js';
import type { Promotion } from '../store/promotion.js';
import { retriedAfter } from '../store/retry-job.js';
import type { Store } from '../store/store.js';

/** The `fresh` label of an attempt of `epoch`, or undefined for a key's first generation. */
export function freshGeneration(
  store: Store,
  key: string,
  epoch: number,
  promoted: Promotion | undefined,
): string | undefined {
  const parts: string[] = [];
  if (promoted !== undefined) parts.push(`promoted:${promoted.shadow_receipt_sha256}`);
  const after = retriedAfter(store, key);
  if (after !== undefined && epoch > after) parts.push(`retried-after:${after}`);
  return parts.length === 0 ? undefined : sha256Hex(parts.join('\n'));
}
