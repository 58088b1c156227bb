import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pae, signEnvelope, strictBase64, verifyPae } from '../../src/core/dsse.js';

describe('pae', () => {
  it('matches the DSSE specification example byte for byte', () => {
    expect(pae('http://example.com/HelloWorld', Buffer.from('hello world')).toString()).toBe(
      'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
    );
  });

  it('counts lengths in bytes, not characters', () => {
    expect(pae('t/é', Buffer.from('ü', 'utf8')).toString('utf8')).toBe('DSSEv1 4 t/é 2 ü');
  });

  it('separates type and body so moving bytes between them changes the encoding', () => {
    expect(pae('a b', Buffer.from('c')).equals(pae('a', Buffer.from('b c')))).toBe(false);
  });
});

describe('signEnvelope', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');

  it('produces a signature that verifies over the PAE with the matching public key only', () => {
    const env = signEnvelope('x/y', Buffer.from('{"a":1}'), privateKey, 'abcd');
    const sig = Buffer.from(env.signatures[0]!.sig, 'base64');
    const payload = Buffer.from(env.payload, 'base64');
    expect(env.signatures[0]!.keyid).toBe('abcd');
    expect(verifyPae('x/y', payload, publicKey, sig)).toBe(true);
    expect(verifyPae('x/z', payload, publicKey, sig)).toBe(false);
    expect(verifyPae('x/y', payload, other.publicKey, sig)).toBe(false);
    expect(verifyPae('x/y', payload, publicKey, sig.subarray(0, 63))).toBe(false);
  });

  it('treats a key of another type as no match rather than throwing', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
    expect(verifyPae('x', Buffer.from('y'), rsa.publicKey, Buffer.alloc(64))).toBe(false);
  });
});

describe('strictBase64', () => {
  const cases: Array<{ name: string; text: string; ok: boolean }> = [
    { name: 'padded standard base64', text: 'aGk=', ok: true },
    { name: 'empty string', text: '', ok: true },
    { name: 'missing padding', text: 'aGk', ok: false },
    { name: 'url-safe alphabet', text: '-_8=', ok: false },
    { name: 'embedded whitespace', text: 'aG k=', ok: false },
    { name: 'trailing newline', text: 'aGk=\n', ok: false },
    { name: 'non-zero padding bits (aGl= decodes like aGk=)', text: 'aGl=', ok: false },
    { name: 'one byte with two pad characters', text: 'aA==', ok: true },
    { name: 'one byte with non-zero trailing bits', text: 'aG==', ok: false },
    { name: 'three pad characters', text: 'a===', ok: false },
  ];
  it.each(cases)('$name → accepted: $ok', ({ text, ok }) => {
    expect(strictBase64(text) !== null).toBe(ok);
  });
});
