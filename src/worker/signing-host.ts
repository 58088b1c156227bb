// Once genjob-trust.json pins a key, work refuses every unsigned receipt. A local serve signs only with
// GENJOB_SIGN_KEY in the worker's environment or serve.sign_key in the user's config file (docs/trust.md):
// without either, every job would be generated, refused and dead-lettered once its attempts ran out, so
// work refuses before claiming. A remote host's key cannot be known here: its refusal says what to do.
import { loadConfigFile, userConfigFile } from '../cli/config-file.js';
import { UsageError } from '../core/errors.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { trustFilePath } from '../trust/trust-file.js';

/** How a host comes to sign its receipts, said after an unsigned receipt is refused. */
export const SIGNING_HINT =
  'the host must sign its receipts: run its serve with --sign-key FILE or GENJOB_SIGN_KEY=FILE in its environment (FILE: the private key of a key genjob-trust.json pins; docs/trust.md)';

/** Whether a serve started here, as a child of this worker, would sign its receipts. */
export function localServeSigns(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.GENJOB_SIGN_KEY) return true;
  return loadConfigFile(userConfigFile(env))?.config.serve?.sign_key !== undefined;
}

/** A usage error before any claim when keys are pinned for receipts and the local serve would not sign. */
export function requireLocalSigner(root: string, policy: ReceiptTrustPolicy): void {
  if (policy.trusted.length === 0 || localServeSigns()) return;
  throw new UsageError(
    'EGJ_UNSIGNED_HOST',
    `${trustFilePath(root)} pins ${policy.trusted.length} key(s), so every receipt must be signed, and the local serve has no key to sign with: set GENJOB_SIGN_KEY=FILE for this work (FILE: the private key genjob keygen wrote for a pinned key), or serve.sign_key in ${userConfigFile()} (docs/trust.md); nothing was claimed`,
  );
}
