// Which generation of a key a live attempt asks the host for. The host caches a result by (key,
// generator, job digest, plane) and answers every later request for it from there, so a job that must
// be generated anew — promoted from a shadow plane — names a fresh generation: a digest of the
// promotion (the shadow receipt's digest). The host folds it into the entry's name, so the new run has
// an entry of its own, and every attempt after the same promotion asks for the same one (a redelivery
// never spends twice).
import { sha256Hex } from '../core/sha256.js';
import type { Promotion } from '../store/promotion.js';

/** The `fresh` label of a live attempt, or undefined for a key's first generation. */
export function freshGeneration(promoted: Promotion | undefined): string | undefined {
  return promoted === undefined ? undefined : sha256Hex(`promoted:${promoted.shadow_receipt_sha256}`);
}
