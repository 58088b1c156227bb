import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GenjobError } from '../../src/core/errors.js';
import {
  generateKeyFile,
  keyIdOf,
  loadPrivateKey,
  parsePublicKey,
  publicKeyString,
} from '../../src/trust/keys.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'genjob-keys-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GenjobError);
    return (err as GenjobError).code;
  }
  throw new Error('expected an error');
}

describe('generateKeyFile', () => {
  it('writes a PKCS8 PEM private key with mode 0600 and returns its public key and id', () => {
    const path = join(dir, 'host.key');
    const { publicKey, keyid } = generateKeyFile(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(publicKey).toMatch(/^ed25519:[A-Za-z0-9+/]{43}=$/);
    expect(keyid).toMatch(/^[0-9a-f]{16}$/);
    const loaded = loadPrivateKey(path);
    expect(publicKeyString(loaded)).toBe(publicKey);
    expect(keyIdOf(parsePublicKey(publicKey))).toBe(keyid);
  });

  it('refuses to overwrite an existing file and leaves it untouched', () => {
    const path = join(dir, 'host.key');
    writeFileSync(path, 'precious');
    expect(codeOf(() => generateKeyFile(path))).toBe('EGJ_KEY_EXISTS');
    expect(readFileSync(path, 'utf8')).toBe('precious');
  });

  it('gives two generated keys different ids', () => {
    expect(generateKeyFile(join(dir, 'a')).keyid).not.toBe(generateKeyFile(join(dir, 'b')).keyid);
  });
});

describe('loadPrivateKey', () => {
  const cases: Array<{ name: string; setup: (path: string) => void; code: string }> = [
    { name: 'a missing file', setup: () => {}, code: 'EGJ_KEY_MISSING' },
    {
      name: 'a key readable by others',
      setup: (p) => {
        generateKeyFile(p);
        chmodSync(p, 0o644);
      },
      code: 'EGJ_KEY_MODE',
    },
    {
      name: 'a file that is not PEM',
      setup: (p) => writeFileSync(p, 'hello', { mode: 0o600 }),
      code: 'EGJ_KEY_INVALID',
    },
    {
      name: 'an RSA key',
      setup: (p) => {
        const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
        writeFileSync(p, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
      },
      code: 'EGJ_KEY_INVALID',
    },
  ];
  it.each(cases)('refuses $name with $code', ({ setup, code }) => {
    const path = join(dir, 'k');
    setup(path);
    expect(codeOf(() => loadPrivateKey(path))).toBe(code);
  });
});

describe('parsePublicKey', () => {
  const good = publicKeyString(generateKeyPairSync('ed25519').publicKey);
  const raw = good.slice('ed25519:'.length);

  it('round-trips the textual form', () => {
    expect(publicKeyString(parsePublicKey(good))).toBe(good);
  });

  const bad: Array<{ name: string; text: string }> = [
    { name: 'no prefix', text: raw },
    { name: 'another algorithm', text: `rsa:${raw}` },
    { name: 'upper-case prefix', text: `ED25519:${raw}` },
    { name: 'unpadded base64', text: `ed25519:${raw.replace(/=$/, '')}` },
    { name: 'url-safe base64', text: `ed25519:${Buffer.alloc(32, 0xfb).toString('base64url')}=` },
    { name: 'a 31-byte key', text: `ed25519:${Buffer.alloc(31, 1).toString('base64')}` },
    { name: 'a 33-byte key', text: `ed25519:${Buffer.alloc(33, 1).toString('base64')}` },
    { name: 'trailing whitespace', text: `${good} ` },
    { name: 'empty', text: '' },
  ];
  it.each(bad)('refuses $name', ({ text }) => {
    expect(codeOf(() => parsePublicKey(text))).toBe('EGJ_KEY_INVALID');
  });

  it('computes the key id as the first 16 hex digits of sha256 of the raw key', async () => {
    const { createHash } = await import('node:crypto');
    const expected = createHash('sha256').update(Buffer.from(raw, 'base64')).digest('hex').slice(0, 16);
    expect(keyIdOf(parsePublicKey(good))).toBe(expected);
  });
});
