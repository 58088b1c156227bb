// A sealed record's file (core/sealed-record.ts): written whole by replaceFile with its seal, read as
// hostile (a regular file, capped), and followed only when the user's secret sealed it. What is found and
// not followed says why, so the command that skips it can tell the user.
import { RecordUnreadableError } from '../core/errors.js';
import { sealRecord, unsealRecord } from '../core/sealed-record.js';
import { readRecord, replaceFile } from './durable.js';
import type { Store } from './store.js';

/** A sealed record as read: followed, or found and not followed (why, naming the file), or none. */
export type SealedRead<T> = { record: T } | { ignored: string } | undefined;

/** Where a sealed record sits and what it is: the seal's domain and name, and what its contents must be. */
export interface SealedKind {
  domain: string;
  /** Binds the seal to one record (a key, a plane and key): a sealed record moved elsewhere is refused. */
  name: string;
  /** What the record is, for the reason it was not followed ("promotion pin"). */
  what: string;
  is: (v: Record<string, unknown>) => boolean;
}

export function readSealed<T>(
  store: Store,
  file: string,
  secret: Buffer | null,
  kind: SealedKind,
): SealedRead<T> {
  let bytes: Buffer | undefined;
  try {
    bytes = readRecord(store, file);
  } catch (err) {
    if (err instanceof RecordUnreadableError) return { ignored: err.message };
    throw err;
  }
  if (bytes === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ignored: `${file}: not a ${kind.what} (not JSON)` };
  }
  if (secret === null)
    return {
      ignored: `${file}: no user secret to check the ${kind.what}'s seal with (no writable cache directory)`,
    };
  const record = unsealRecord(secret, kind.domain, kind.name, value);
  if (record === undefined)
    return {
      ignored: `${file}: the ${kind.what} is not sealed by this user's genjob (committed on a branch, copied from elsewhere, or made by an older genjob)`,
    };
  if (!kind.is(record)) return { ignored: `${file}: not a ${kind.what} for ${kind.name}` };
  return { record: record as T };
}

/** Write `record` to `file` sealed under `secret` (null: unsealed, which readSealed never follows). */
export function writeSealed<T extends object>(
  store: Store,
  file: string,
  secret: Buffer | null,
  kind: Pick<SealedKind, 'domain' | 'name'>,
  record: T,
): void {
  const sealed = secret === null ? record : sealRecord(secret, kind.domain, kind.name, record);
  replaceFile(store, file, Buffer.from(`${JSON.stringify(sealed, null, 2)}\n`));
}
