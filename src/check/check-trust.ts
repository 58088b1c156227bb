// The keys a repository pins for check records: entries of genjob-trust.json marked for checks. While
// none is pinned, records count unsigned (their digest names them); once one is, only records signed by
// a pinned check key count, wherever they came from.
import type { TrustedKey } from '../core/receipt-envelope.js';
import { parsePublicKey } from '../trust/keys.js';
import { readTrust } from '../trust/trust-file.js';

export function checkKeys(root: string): TrustedKey[] {
  return readTrust(root)
    .filter((e) => (e as { for?: string[] }).for?.includes('checks'))
    .map((e) => ({ name: e.name, publicKey: parsePublicKey(e.key) }));
}
