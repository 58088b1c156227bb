// `verify/apply --require-sandbox`: refuse a receipt whose generator ran unconfined. The receipt's
// `sandbox` field is inside what is hashed and signed; a receipt without it (made before the field
// existed) counts as unconfined. `builtin` passes: no generator code ran, serve made the call.
import { RejectedError } from '../core/errors.js';
import type { Receipt } from '../core/receipt.js';

export function requireSandbox(receipt: Receipt, file: string): void {
  const kind = receipt.sandbox?.kind;
  if (kind === 'bwrap' || kind === 'builtin') return;
  const how =
    kind === undefined ? 'the receipt does not say how the generator ran' : 'sandbox kind is "none"';
  throw new RejectedError(
    'EGJ_UNCONFINED',
    `${file}: the generator ran unconfined (${how}); --require-sandbox refuses it`,
    file,
  );
}
