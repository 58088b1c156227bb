// ed25519 key files and the one textual form of a public key: `ed25519:<base64 of the raw 32 bytes>`.
// A key id is the first 16 hex digits of sha256(raw public key): a hint that lets a verifier
// try the likely key first, never a reason to trust. A private key file is created exclusively
// with mode 0600 and is refused when group or others may read it (as ssh does).
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import * as nodeFs from 'node:fs';
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { strictBase64 } from '../core/dsse.js';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { createExclusive, fsyncDir } from '../store/durable.js';

export const PUBLIC_KEY_PREFIX = 'ed25519:';
const RAW_KEY_BYTES = 32;
const MAX_KEY_FILE_BYTES = 16 * 1024;

function rawPublicKey(key: KeyObject): Buffer {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  if (pub.asymmetricKeyType !== 'ed25519')
    throw new TypeError(`not an ed25519 key (${pub.asymmetricKeyType})`);
  const jwk = pub.export({ format: 'jwk' });
  return Buffer.from(jwk.x as string, 'base64url');
}

/** `ed25519:<base64>` for a public key (or the public half of a private key). */
export function publicKeyString(key: KeyObject): string {
  return PUBLIC_KEY_PREFIX + rawPublicKey(key).toString('base64');
}

/** First 16 hex digits of sha256(raw public key). */
export function keyIdOf(key: KeyObject): string {
  return sha256Hex(rawPublicKey(key)).slice(0, 16);
}

/** Parse `ed25519:<base64 of 32 bytes>`; anything else is a UsageError (EGJ_KEY_INVALID). */
export function parsePublicKey(text: string): KeyObject {
  const bad = (rule: string) =>
    new UsageError('EGJ_KEY_INVALID', `public key ${JSON.stringify(text.slice(0, 80))}: ${rule}`);
  if (!text.startsWith(PUBLIC_KEY_PREFIX)) throw bad(`must start with '${PUBLIC_KEY_PREFIX}'`);
  const raw = strictBase64(text.slice(PUBLIC_KEY_PREFIX.length));
  if (raw === null) throw bad('key is not canonical base64 (standard alphabet, padded)');
  if (raw.length !== RAW_KEY_BYTES)
    throw bad(`key is ${raw.length} bytes, an ed25519 key is ${RAW_KEY_BYTES}`);
  try {
    return createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
      format: 'jwk',
    });
  } catch (err) {
    throw new UsageError('EGJ_KEY_INVALID', `public key ${text}: not a usable ed25519 key`, { cause: err });
  }
}

/** Create a new ed25519 key pair; write the private key (PKCS8 PEM, 0600) to `path`, which must not exist. */
export function generateKeyFile(path: string): { publicKey: string; keyid: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pem = Buffer.from(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, 'utf8');
  try {
    createExclusive({ fs: nodeFs }, path, pem, 0o600);
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') {
      throw new UsageError(
        'EGJ_KEY_EXISTS',
        `${path}: a file is already there; keygen never overwrites a key`,
      );
    }
    throw IoError.wrap('create', path, err);
  }
  fsyncDir({ fs: nodeFs }, dirname(path));
  return { publicKey: publicKeyString(privateKey), keyid: keyIdOf(privateKey) };
}

/** Read an ed25519 private key file (PKCS8 PEM). Refuses a file group or others can read. */
export function loadPrivateKey(path: string): KeyObject {
  let pem: Buffer;
  try {
    const fd = openSync(path, constants.O_RDONLY);
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new UsageError('EGJ_KEY_INVALID', `${path}: not a regular file`);
      if ((st.mode & 0o077) !== 0) {
        throw new UsageError(
          'EGJ_KEY_MODE',
          `${path}: private key is readable by group or others (mode ${(st.mode & 0o777).toString(8)}); run chmod 600 ${path}`,
        );
      }
      if (st.size > MAX_KEY_FILE_BYTES)
        throw new UsageError('EGJ_KEY_INVALID', `${path}: too large for a key file`);
      pem = readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    if (errnoOf(err) === 'ENOENT')
      throw new UsageError('EGJ_KEY_MISSING', `${path}: no such key file`, { cause: err });
    throw IoError.wrap('read', path, err);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (err) {
    throw new UsageError('EGJ_KEY_INVALID', `${path}: not a PEM private key`, { cause: err });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new UsageError(
      'EGJ_KEY_INVALID',
      `${path}: key is ${key.asymmetricKeyType}, genjob signs with ed25519`,
    );
  }
  return key;
}
