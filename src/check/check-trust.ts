// The keys a repository pins for check records: entries of genjob-trust.json `for` checks. While
// none is pinned, records count unsigned (their digest names them); once one is, only records signed by
// a pinned check key count, wherever they came from.
import type { TrustedKey } from '../core/receipt-envelope.js';
import { readTrust, trustedFor } from '../trust/trust-file.js';

export function checkKeys(root: string): TrustedKey[] {
  return trustedFor(readTrust(root), 'checks');
}
