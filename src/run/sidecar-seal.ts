// A sidecar seal of the run plane: one HMAC (64 hex digits and a newline) under the user's secret, kept
// beside what it seals (a run manifest, a gate record) as `<name>.seal`. The secret lives outside every
// repository, so a seal cannot come with a branch or a copy; what it covers is named by `domain` and
// `name` (core/mac.ts), so a seal moved beside another file holds for nothing. Unlike a sealed record
// (store/sealed-file.ts), which carries its seal inside, a manifest or gate record is never rewritten and
// is cited by the digest of its bytes, so its seal lies beside it.
import { IoError } from '../core/errors.js';
import { macHolds, macOf } from '../core/mac.js';
import { readIfExists, replaceFile } from '../store/durable.js';
import type { Store } from '../store/store.js';

/** A seal is 64 hex digits and a newline; a bigger file is no seal. */
const MAX_SEAL_BYTES = 1024;

export interface Seal {
  file: string;
  domain: string;
  name: string;
  /** The sha256 (hex) of the bytes sealed. */
  sha256: string;
}

/** Write (or replace) the seal, durably. */
export function writeSeal(store: Store, s: Seal, secret: Buffer): void {
  replaceFile(store, s.file, Buffer.from(`${macOf(secret, s.domain, s.name, s.sha256)}\n`));
}

/**
 * Whether the seal file holds under `secret`: a seal that is not a regular file, or too big, is none; a
 * disk that failed reading it throws (EGJ_IO): that is no answer, and never "not yours".
 */
export function sealHolds(store: Store, s: Seal, secret: Buffer): boolean {
  let bytes: Buffer | undefined;
  try {
    bytes = readIfExists(store, s.file, MAX_SEAL_BYTES);
  } catch (err) {
    if (err instanceof IoError) throw err;
    return false;
  }
  return bytes !== undefined && macHolds(secret, s.domain, s.name, s.sha256, bytes.toString('utf8'));
}
