// sha256 helpers. Digests are lower-case hex everywhere genjob writes them.
import { createHash } from 'node:crypto';

export const SHA256_HEX = /^[0-9a-f]{64}$/;

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
