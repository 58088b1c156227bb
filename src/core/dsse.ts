// DSSE (Dead Simple Signing Envelope) with ed25519: the signature covers
// PAE = "DSSEv1" SP len(type) SP type SP len(body) SP body, never the JSON around it,
// so the payload type is signed too and re-serialising the envelope cannot change what was signed.
// Lengths are ASCII decimal byte counts. Pure: keys come in as KeyObjects.
import { type KeyObject, sign, verify } from 'node:crypto';

export const RECEIPT_PAYLOAD_TYPE = 'application/vnd.genjob.receipt+json';
export const ED25519_SIGNATURE_BYTES = 64;

export interface EnvelopeSignature {
  keyid: string;
  /** base64 of the 64-byte ed25519 signature over the PAE. */
  sig: string;
}

export interface Envelope {
  payloadType: string;
  /** base64 (standard alphabet, padded) of the payload bytes. */
  payload: string;
  signatures: EnvelopeSignature[];
}

/** The pre-authentication encoding DSSE signs: binds the payload type and both lengths. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, 'utf8'),
    type,
    Buffer.from(` ${payload.length} `, 'utf8'),
    payload,
  ]);
}

/** Sign `payload` with an ed25519 private key; `keyid` is a hint for the verifier, not a credential. */
export function signEnvelope(
  payloadType: string,
  payload: Buffer,
  privateKey: KeyObject,
  keyid: string,
): Envelope {
  const sig = sign(null, pae(payloadType, payload), privateKey);
  return {
    payloadType,
    payload: payload.toString('base64'),
    signatures: [{ keyid, sig: sig.toString('base64') }],
  };
}

/** True when `sig` is a valid ed25519 signature by `publicKey` over the PAE of (type, payload). */
export function verifyPae(
  payloadType: string,
  payload: Uint8Array,
  publicKey: KeyObject,
  sig: Uint8Array,
): boolean {
  if (sig.length !== ED25519_SIGNATURE_BYTES) return false;
  try {
    return verify(null, pae(payloadType, payload), publicKey, sig);
  } catch {
    return false; // a key of the wrong type is simply not a match
  }
}

/** Decode base64 only in its one canonical form (standard alphabet, padded, no whitespace); null otherwise. */
export function strictBase64(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}
