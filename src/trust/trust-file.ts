// The pinned keys: genjob-trust.json at the repository root, meant to be committed so every
// verifier of the repository trusts the same hosts. Names are unique and each key appears once;
// the file is rewritten whole (tmp + fsync + rename + fsync of the root) so a crash leaves the old
// list or the new one, never half of either. A missing file means no key is trusted. A key is pinned
// for what its `for` names: receipts (the default, when absent), check records, or both; a key pinned
// only for checks never verifies a receipt. The checkout's file is the branch's: it is read only as a
// regular file, never through a symbolic link (one to /dev/zero hung every command that loads the
// policy, one to a file elsewhere would read that file), and never past its cap.
import * as nodeFs from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { ConflictError, RecordUnreadableError, UsageError } from '../core/errors.js';
import type { ReceiptTrustPolicy, TrustedKey } from '../core/receipt-envelope.js';
import { checkSchema, issueText } from '../core/schema-check.js';
import { replaceFile } from '../store/durable.js';
import { readRecordFile } from '../store/read-record.js';
import { keyIdOf, parsePublicKey, publicKeyString } from './keys.js';

export const TRUST_FILE = 'genjob-trust.json';
export const TRUST_SCHEMA = 'genjob/trust@1';
export const TRUST_NAME = /^[a-z0-9._-]{1,64}$/;
/** What a pinned key may sign: receipts (the default), check records. */
export const TRUST_USES = ['receipts', 'checks'] as const;
export type TrustUse = (typeof TRUST_USES)[number];
const MAX_TRUST_FILE_BYTES = 1024 * 1024;

const TrustFileSchema = z.strictObject({
  schema: z.literal(TRUST_SCHEMA),
  keys: z
    .array(
      z.strictObject({
        name: z.string().check(z.regex(TRUST_NAME, 'names are 1-64 of [a-z0-9._-]')),
        key: z.string().check(z.startsWith('ed25519:')),
        added: z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}/, 'must be an ISO date'), z.maxLength(64)),
        for: z.optional(z.array(z.enum(TRUST_USES)).check(z.minLength(1), z.maxLength(TRUST_USES.length))),
      }),
    )
    .check(z.maxLength(1000)),
});

export type TrustEntry = z.infer<typeof TrustFileSchema>['keys'][number];

export function trustFilePath(root: string): string {
  return join(root, TRUST_FILE);
}

function malformed(file: string, rule: string): UsageError {
  return new UsageError('EGJ_TRUST_FILE', `${file}: not a valid trust file: ${rule}`);
}

/** The trusted keys, in file order. Missing file → []. Malformed → UsageError EGJ_TRUST_FILE. */
export function readTrust(root: string): TrustEntry[] {
  const file = trustFilePath(root);
  const bytes = readRegular(file);
  return bytes === undefined ? [] : parseTrust(bytes, file);
}

/** A regular file's bytes, at most MAX_TRUST_FILE_BYTES of them (undefined: no file); anything else is malformed. */
function readRegular(file: string): Buffer | undefined {
  try {
    // read as a record of .gen/ is: no link followed, a FIFO never waited on, nothing past the cap
    return readRecordFile(nodeFs, file, MAX_TRUST_FILE_BYTES);
  } catch (err) {
    if (!(err instanceof RecordUnreadableError)) throw err;
    throw malformed(
      file,
      err.cap === undefined ? `it ${err.rule}, not a regular file` : `larger than ${err.cap} bytes`,
    );
  }
}

/** The keys of a trust file's bytes; `file` names where they came from (a path, or REV:PATH). */
export function parseTrust(bytes: Buffer, file: string): TrustEntry[] {
  if (bytes.length > MAX_TRUST_FILE_BYTES) throw malformed(file, `larger than ${MAX_TRUST_FILE_BYTES} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw malformed(file, `not JSON (${(err as Error).message})`);
  }
  const parsed = checkSchema(TrustFileSchema, raw);
  if (!parsed.ok) throw malformed(file, `at ${issueText(parsed.issue)}`);
  const names = new Set<string>();
  const keys = new Set<string>();
  for (const entry of parsed.data.keys) {
    let canonical: string;
    try {
      canonical = publicKeyString(parsePublicKey(entry.key));
    } catch (err) {
      throw malformed(file, `key '${entry.name}': ${(err as Error).message}`);
    }
    if (names.has(entry.name)) throw malformed(file, `name '${entry.name}' appears twice`);
    if (keys.has(canonical)) throw malformed(file, `key '${entry.name}' is also trusted under another name`);
    names.add(entry.name);
    keys.add(canonical);
  }
  return parsed.data.keys;
}

/** The policy decodeReceiptWithPolicy needs, from trust entries. */
export function trustPolicyOf(
  entries: readonly TrustEntry[],
  options: { requireSignature?: boolean } = {},
): ReceiptTrustPolicy {
  return {
    trusted: trustedFor(entries, 'receipts'),
    requireSignature: options.requireSignature ?? false,
  };
}

/** The policy decodeReceiptWithPolicy needs, built from the trust file in the checkout (not for the merge gate). */
export function loadTrustPolicy(
  root: string,
  options: { requireSignature?: boolean } = {},
): ReceiptTrustPolicy {
  return trustPolicyOf(readTrust(root), options);
}

/** The entries pinned for `use`: an entry without `for` is pinned for receipts only. */
export function trustedFor(entries: readonly TrustEntry[], use: TrustUse): TrustedKey[] {
  return entries
    .filter((e) => (e.for ?? ['receipts']).includes(use))
    .map((e) => ({ name: e.name, publicKey: parsePublicKey(e.key) }));
}

function writeTrust(root: string, entries: TrustEntry[]): void {
  const file = trustFilePath(root);
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const doc = {
    schema: TRUST_SCHEMA,
    keys: sorted.map((e) => ({ name: e.name, key: e.key, added: e.added, ...(e.for ? { for: e.for } : {}) })),
  };
  const bytes = Buffer.from(`${JSON.stringify(doc, null, 2)}\n`, 'utf8');
  replaceFile({ fs: nodeFs }, file, bytes);
}

export interface AddResult {
  added: boolean;
  name: string;
  key: string;
  keyid: string;
}

/**
 * Trust `key` under `name`. The same name and key again is a no-op (added: false);
 * a name bound to another key, or a key already trusted under another name, is a ConflictError.
 */
export function addTrustedKey(
  root: string,
  name: string,
  key: string,
  now: Date = new Date(),
  uses?: readonly TrustUse[],
): AddResult {
  const file = trustFilePath(root);
  if (!TRUST_NAME.test(name)) {
    throw new UsageError('EGJ_TRUST_NAME', `${file}: key name '${name}' must be 1-64 of [a-z0-9._-]`);
  }
  const publicKey = parsePublicKey(key);
  const canonical = publicKeyString(publicKey);
  const keyid = keyIdOf(publicKey);
  const entries = readTrust(root);
  // receipts alone is the default and is written as no `for` at all, as before it existed
  const wanted =
    uses && !(uses.length === 1 && uses[0] === 'receipts') ? [...new Set(uses)].sort() : undefined;
  const byName = entries.find((e) => e.name === name);
  if (byName !== undefined) {
    const same = (byName.for ?? []).join() === (wanted ?? []).join();
    if (byName.key === canonical && same) return { added: false, name, key: canonical, keyid };
    if (byName.key === canonical)
      throw new ConflictError(
        'EGJ_TRUST_NAME_TAKEN',
        `${file}: '${name}' is pinned for ${(byName.for ?? ['receipts']).join(' and ')}; remove it first to pin it for something else`,
      );
    throw new ConflictError(
      'EGJ_TRUST_NAME_TAKEN',
      `${file}: name '${name}' already trusts another key; remove it first (genjob trust remove ${name})`,
    );
  }
  const byKey = entries.find((e) => e.key === canonical);
  if (byKey !== undefined) {
    throw new ConflictError(
      'EGJ_TRUST_KEY_DUPLICATE',
      `${file}: key ${keyid} is already trusted as '${byKey.name}'`,
    );
  }
  writeTrust(root, [
    ...entries,
    { name, key: canonical, added: now.toISOString(), ...(wanted ? { for: wanted } : {}) },
  ]);
  return { added: true, name, key: canonical, keyid };
}

/** Stop trusting the key called `name`; receipts it signs are rejected from then on. Unknown name → UsageError. */
export function removeTrustedKey(root: string, name: string): TrustEntry {
  const file = trustFilePath(root);
  const entries = readTrust(root);
  const entry = entries.find((e) => e.name === name);
  if (entry === undefined) {
    const known = entries.map((e) => e.name).join(', ') || '(none)';
    throw new UsageError(
      'EGJ_TRUST_UNKNOWN_NAME',
      `${file}: no trusted key is named '${name}' (trusted: ${known})`,
    );
  }
  writeTrust(
    root,
    entries.filter((e) => e !== entry),
  );
  return entry;
}
