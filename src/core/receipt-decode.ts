// Turn a receipt file's bytes into a Receipt, trusting nothing: size cap, JSON, schema.
// A file may hold a plain receipt or a DSSE envelope around one; both go through
// receipt-envelope.ts so there is one verify order (docs/trust.md). With no policy,
// nothing is trusted and unsigned receipts are accepted; an envelope is still checked
// for shape, payload type and canonical payload, but its signature proves nothing.

import type { Receipt } from './receipt.js';
import {
  type DecodedReceipt,
  decodeSignedReceipt,
  NO_TRUST,
  type ReceiptTrustPolicy,
} from './receipt-envelope.js';

/** Decode without a trust policy (no keys pinned). Throws RejectedError (exit 3). */
export function decodeReceipt(bytes: Uint8Array, file: string): Receipt {
  return decodeSignedReceipt(bytes, file, NO_TRUST).receipt;
}

/** Decode under `policy`; `signer` names the trusted key that verified it, or null when none was pinned. */
export function decodeReceiptWithPolicy(
  bytes: Uint8Array,
  file: string,
  policy: ReceiptTrustPolicy,
): DecodedReceipt {
  return decodeSignedReceipt(bytes, file, policy);
}
