// Decode a receipt under a trust policy, trusting nothing, in a fixed order (docs/trust.md):
// size cap → envelope shape → signature against each pinned key → payload type →
// payload bytes equal their canonical form → receipt schema. The key id is only a hint:
// a signature counts when one of the *trusted public keys* verifies it, whatever keyid it claims.
// Each failure is a RejectedError (exit 3) with its own EGJ_* code.
import type { KeyObject } from 'node:crypto';
import { canonicalBytes, isCanonical } from './canonical-json.js';
import { type Envelope, RECEIPT_PAYLOAD_TYPE, signEnvelope, strictBase64, verifyPae } from './dsse.js';
import { RejectedError } from './errors.js';
import { MAX_RECEIPT_BYTES, type Receipt, ReceiptSchema } from './receipt.js';
import { checkSchema, issueText } from './schema-check.js';

export interface TrustedKey {
  name: string;
  publicKey: KeyObject;
}

export interface ReceiptTrustPolicy {
  trusted: readonly TrustedKey[];
  /** Refuse unsigned receipts even when no key is trusted (then nothing can pass). */
  requireSignature: boolean;
}

export interface DecodedReceipt {
  receipt: Receipt;
  /** Name of the trusted key that verified the envelope; null when the receipt was not checked against any. */
  signer: string | null;
}

export const NO_TRUST: ReceiptTrustPolicy = { trusted: [], requireSignature: false };
export const MAX_SIGNATURES = 16;
const MAX_KEYID_CHARS = 256;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function reject(code: `EGJ_${string}`, file: string, rule: string): RejectedError {
  return new RejectedError(code, `${file}: ${rule}`, file);
}

function parseJsonUtf8(bytes: Uint8Array): { ok: true; value: unknown } | { ok: false; why: string } {
  try {
    return { ok: true, value: JSON.parse(utf8.decode(bytes)) };
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Bytes that begin the way a JSON envelope does (used only to name the error for unparseable input). */
function looksLikeEnvelope(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.subarray(0, 64)).toString('latin1');
  return /^\s*\{\s*"(payload|payloadType|signatures)"/.test(head);
}

function isEnvelopeObject(v: unknown): boolean {
  return (
    isPlainObject(v) &&
    (Object.hasOwn(v, 'payloadType') || Object.hasOwn(v, 'signatures') || Object.hasOwn(v, 'payload'))
  );
}

export interface DecodedEnvelope {
  payloadType: string;
  payload: Buffer;
  signatures: Array<{ keyid: string; sig: Buffer }>;
}

/** A DSSE envelope's exact shape, its base64 decoded strictly (also used for check records). */
export function envelopeShape(v: Record<string, unknown>, file: string): DecodedEnvelope {
  const bad = (rule: string) =>
    reject('EGJ_ENVELOPE_MALFORMED', file, `signed envelope is malformed: ${rule}`);
  const keys = Object.keys(v).sort().join(',');
  if (keys !== 'payload,payloadType,signatures')
    throw bad(`must have exactly payloadType, payload, signatures (has ${keys})`);
  if (typeof v.payloadType !== 'string') throw bad('payloadType is not a string');
  if (typeof v.payload !== 'string') throw bad('payload is not a string');
  const payload = strictBase64(v.payload);
  if (payload === null) throw bad('payload is not canonical base64 (standard alphabet, padded)');
  if (!Array.isArray(v.signatures)) throw bad('signatures is not an array');
  if (v.signatures.length > MAX_SIGNATURES) throw bad(`more than ${MAX_SIGNATURES} signatures`);
  const signatures = v.signatures.map((s: unknown, i) => {
    if (!isPlainObject(s) || Object.keys(s).sort().join(',') !== 'keyid,sig') {
      throw bad(`signatures[${i}] must have exactly keyid and sig`);
    }
    if (typeof s.keyid !== 'string' || s.keyid.length > MAX_KEYID_CHARS)
      throw bad(`signatures[${i}].keyid is not a short string`);
    const sig = typeof s.sig === 'string' ? strictBase64(s.sig) : null;
    if (sig === null) throw bad(`signatures[${i}].sig is not canonical base64`);
    return { keyid: s.keyid, sig };
  });
  return { payloadType: v.payloadType, payload, signatures };
}

/** The trusted key that verifies one of the envelope's signatures, or null. Every pair is tried: keyid decides nothing. */
export function findSigner(env: DecodedEnvelope, trusted: readonly TrustedKey[]): string | null {
  for (const { sig } of env.signatures) {
    for (const key of trusted) {
      if (verifyPae(env.payloadType, env.payload, key.publicKey, sig)) return key.name;
    }
  }
  return null;
}

function schemaCheck(raw: unknown, file: string): Receipt {
  const parsed = checkSchema(ReceiptSchema, raw);
  if (!parsed.ok)
    throw reject('EGJ_RECEIPT_SCHEMA', file, `receipt breaks its schema at ${issueText(parsed.issue)}`);
  return parsed.data;
}

/** Decode a receipt file (plain JSON or a DSSE envelope) under `policy`. Throws RejectedError on any failure. */
export function decodeSignedReceipt(
  bytes: Uint8Array,
  file: string,
  policy: ReceiptTrustPolicy,
): DecodedReceipt {
  const expectSignature = policy.trusted.length > 0 || policy.requireSignature;
  if (bytes.length > MAX_RECEIPT_BYTES) {
    throw reject(
      'EGJ_RECEIPT_TOO_LARGE',
      file,
      `receipt is ${bytes.length} bytes, over the ${MAX_RECEIPT_BYTES} cap`,
    );
  }
  const outer = parseJsonUtf8(bytes);
  if (!outer.ok) {
    if (expectSignature || looksLikeEnvelope(bytes)) {
      throw reject('EGJ_ENVELOPE_MALFORMED', file, `signed envelope is not JSON (${outer.why})`);
    }
    throw reject('EGJ_RECEIPT_SCHEMA', file, `receipt is not JSON (${outer.why})`);
  }

  if (!isEnvelopeObject(outer.value)) {
    if (expectSignature) {
      const why =
        policy.trusted.length > 0 ? `${policy.trusted.length} key(s) are trusted` : 'a signature is required';
      throw reject(
        'EGJ_SIGNATURE_MISSING',
        file,
        `receipt is not signed, but ${why} (see genjob-trust.json)`,
      );
    }
    return { receipt: schemaCheck(outer.value, file), signer: null };
  }

  const env = envelopeShape(outer.value as Record<string, unknown>, file);
  let signer: string | null = null;
  if (expectSignature) {
    if (env.signatures.length === 0) {
      throw reject(
        'EGJ_SIGNATURE_MISSING',
        file,
        'envelope carries no signature, but signatures are required',
      );
    }
    signer = findSigner(env, policy.trusted);
    if (signer === null) {
      const ids = env.signatures.map((s) => s.keyid || '(none)').join(', ');
      throw reject(
        'EGJ_SIGNATURE_INVALID',
        file,
        `no trusted key verifies the signature (claimed keyid ${ids}); trust the host's key with genjob trust add`,
      );
    }
  }
  if (env.payloadType !== RECEIPT_PAYLOAD_TYPE) {
    throw reject(
      'EGJ_PAYLOAD_TYPE',
      file,
      `payload type is ${JSON.stringify(env.payloadType.slice(0, 100))}, expected ${RECEIPT_PAYLOAD_TYPE}`,
    );
  }
  const inner = parseJsonUtf8(env.payload);
  if (!inner.ok)
    throw reject('EGJ_PAYLOAD_NOT_CANONICAL', file, `signed payload is not UTF-8 JSON (${inner.why})`);
  let canonical: boolean;
  try {
    canonical = isCanonical(env.payload, inner.value);
  } catch {
    canonical = false;
  }
  if (!canonical) {
    throw reject(
      'EGJ_PAYLOAD_NOT_CANONICAL',
      file,
      'signed payload bytes are not canonical JSON (RFC 8785: sorted unique keys, no whitespace, shortest numbers)',
    );
  }
  return { receipt: schemaCheck(inner.value, file), signer };
}

/** The bytes a generator host writes: canonical JSON of a DSSE envelope over the canonical receipt. */
export function signReceipt(receipt: Receipt, privateKey: KeyObject, keyid: string): Buffer {
  // Never sign something a verifier would refuse: a host bug should fail here, loudly.
  const checked = checkSchema(ReceiptSchema, receipt);
  if (!checked.ok)
    throw new Error(`refusing to sign a receipt that breaks its schema at ${issueText(checked.issue)}`);
  const envelope: Envelope = signEnvelope(
    RECEIPT_PAYLOAD_TYPE,
    canonicalBytes(checked.data),
    privateKey,
    keyid,
  );
  return canonicalBytes(envelope);
}
