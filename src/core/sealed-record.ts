// A record the user's genjob writes into a repository and later acts on — a promotion pin (which command
// the next live attempts run, with which sandbox flags), a shadow run's record (what promote pins) —
// carries a seal: an HMAC under the user's secret over its canonical JSON, kept apart by domain and name.
// A branch can commit any file under .gen/, but no seal: a record whose seal does not hold (committed,
// copied from another user's store, or written by a genjob before records were sealed) is not this
// user's, and is read as no record.
import { canonicalJson } from './canonical-json.js';
import { macHolds, macOf } from './mac.js';

export type Sealed<T> = T & { seal: string };

/** `record` with its seal under `secret`, as the record `name` of the kind `domain`. */
export function sealRecord<T extends object>(
  secret: Buffer,
  domain: string,
  name: string,
  record: T,
): Sealed<T> {
  return { ...record, seal: macOf(secret, domain, name, canonicalJson(record)) };
}

/**
 * `value` (parsed JSON) without its seal, when that seal is `secret`'s for `name` in `domain`; undefined
 * when it has none, another, or there is no secret to check it with.
 */
export function unsealRecord(
  secret: Buffer | null,
  domain: string,
  name: string,
  value: unknown,
): Record<string, unknown> | undefined {
  // Stryker disable next-line ConditionalExpression: a string or number destructures to no seal, refused below all the same
  if (secret === null || typeof value !== 'object' || value === null || Array.isArray(value))
    return undefined;
  const { seal, ...record } = value as Record<string, unknown>;
  if (typeof seal !== 'string') return undefined;
  return macHolds(secret, domain, name, canonicalJson(record), seal) ? record : undefined;
}
