// sha256 helpers. Digests are lower-case hex everywhere genjob writes them.
import { hash } from 'node:crypto';

export const SHA256_HEX = /^[0-9a-f]{64}$/;

/** One-shot (no Hash object per call): a run gate digests several small documents per key. A string is hashed as UTF-8. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}
