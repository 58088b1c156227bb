// Canonical JSON (RFC 8785 for the values genjob uses): keys sorted by UTF-16 code units,
// no insignificant whitespace. Keys, digests and signatures are computed over these bytes,
// so the same document always hashes the same whatever order its keys were written in.
import canonicalize from 'canonicalize';

export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON form');
  return text;
}

export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), 'utf8');
}

/** True when `bytes` are exactly the canonical form of what they parse to (refuses duplicate keys, reordering, odd numbers). */
export function isCanonical(bytes: Uint8Array, parsed: unknown): boolean {
  return Buffer.from(bytes).equals(canonicalBytes(parsed));
}
