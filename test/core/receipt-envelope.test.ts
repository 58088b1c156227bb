import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalBytes, canonicalJson } from '../../src/core/canonical-json.js';
import { RECEIPT_PAYLOAD_TYPE, signEnvelope } from '../../src/core/dsse.js';
import { RejectedError } from '../../src/core/errors.js';
import { MAX_RECEIPT_BYTES, type Receipt } from '../../src/core/receipt.js';
import { decodeReceipt, decodeReceiptWithPolicy } from '../../src/core/receipt-decode.js';
import {
  decodeSignedReceipt,
  NO_TRUST,
  type ReceiptTrustPolicy,
  signReceipt,
} from '../../src/core/receipt-envelope.js';
import { keyIdOf } from '../../src/trust/keys.js';

const FILE = '.gen/receipts/k.json';

function receipt(over: Partial<Receipt> = {}): Receipt {
  return {
    schema: 'genjob/receipt@1',
    key: 'a'.repeat(64),
    job_digest: 'b'.repeat(64),
    epoch: 1,
    status: 'ok',
    outputs: [{ path: 'src/x.ts', sha256: 'c'.repeat(64), bytes: 12 }],
    reason: null,
    worker: { id: 'w1', host: 'box' },
    generator: { command: 'gen', version: null },
    timings: { started_at: '2026-01-01T00:00:00Z', finished_at: '2026-01-01T00:00:01Z', generate_ms: 1000 },
    cached: false,
    ...over,
  };
}

const host = generateKeyPairSync('ed25519');
const attacker = generateKeyPairSync('ed25519');
const spare = generateKeyPairSync('ed25519');
const hostId = keyIdOf(host.publicKey);

const trustHost: ReceiptTrustPolicy = {
  trusted: [
    { name: 'spare', publicKey: spare.publicKey },
    { name: 'free-box', publicKey: host.publicKey },
  ],
  requireSignature: false,
};
const requireOnly: ReceiptTrustPolicy = { trusted: [], requireSignature: true };

/** An envelope over arbitrary payload text, signed by `key`. */
function envelopeOver(
  payloadText: string,
  key: KeyObject = host.privateKey,
  type = RECEIPT_PAYLOAD_TYPE,
): Buffer {
  return canonicalBytes(signEnvelope(type, Buffer.from(payloadText, 'utf8'), key, hostId));
}

function mutateEnvelope(bytes: Buffer, edit: (env: Record<string, unknown>) => void): Buffer {
  const env = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  edit(env);
  return Buffer.from(JSON.stringify(env), 'utf8');
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RejectedError);
    expect((err as RejectedError).exitCode).toBe(3);
    expect((err as RejectedError).message).toContain(FILE);
    return (err as RejectedError).code;
  }
  throw new Error('expected a rejection');
}

describe('decodeSignedReceipt accepts', () => {
  it('round-trips a receipt signed by a trusted key and names that key as signer', () => {
    const bytes = signReceipt(receipt(), host.privateKey, hostId);
    expect(decodeSignedReceipt(bytes, FILE, trustHost)).toEqual({ receipt: receipt(), signer: 'free-box' });
  });

  it('writes the envelope as canonical JSON whose payload is the canonical receipt', () => {
    const bytes = signReceipt(receipt(), host.privateKey, hostId);
    const env = JSON.parse(bytes.toString('utf8'));
    expect(bytes.toString('utf8')).toBe(canonicalJson(env));
    expect(env.payloadType).toBe(RECEIPT_PAYLOAD_TYPE);
    expect(Buffer.from(env.payload, 'base64').toString('utf8')).toBe(canonicalJson(receipt()));
  });

  it('accepts a plain receipt when no key is trusted, with no signer', () => {
    expect(decodeSignedReceipt(canonicalBytes(receipt()), FILE, NO_TRUST)).toEqual({
      receipt: receipt(),
      signer: null,
    });
  });

  it('decodes an envelope when no key is trusted, but reports no signer (an unpinned signature proves nothing)', () => {
    const bytes = signReceipt(receipt(), attacker.privateKey, 'whatever');
    expect(decodeSignedReceipt(bytes, FILE, NO_TRUST)).toEqual({ receipt: receipt(), signer: null });
  });

  it('accepts an envelope whose keyid hint is wrong, since the trusted key itself verifies it', () => {
    const bytes = signReceipt(receipt(), host.privateKey, 'not-the-id');
    expect(decodeSignedReceipt(bytes, FILE, trustHost).signer).toBe('free-box');
  });

  it('accepts when any one of several signatures is by a trusted key', () => {
    const good = JSON.parse(signReceipt(receipt(), host.privateKey, hostId).toString('utf8'));
    const bad = JSON.parse(signReceipt(receipt(), attacker.privateKey, hostId).toString('utf8'));
    const both = Buffer.from(
      JSON.stringify({ ...good, signatures: [bad.signatures[0], good.signatures[0]] }),
    );
    expect(decodeSignedReceipt(both, FILE, trustHost).signer).toBe('free-box');
  });

  it('keeps outputs named __proto__ and constructor as plain array entries and pollutes no prototype', () => {
    const outputs = [
      { path: '__proto__', sha256: 'd'.repeat(64), bytes: 1 },
      { path: 'constructor', sha256: 'e'.repeat(64), bytes: 2 },
      { path: 'a/__proto__/prototype', sha256: 'f'.repeat(64), bytes: 3 },
    ];
    const r = receipt({ outputs });
    const signed = decodeSignedReceipt(signReceipt(r, host.privateKey, hostId), FILE, trustHost);
    const plain = decodeReceipt(canonicalBytes(r), FILE);
    for (const got of [signed.receipt, plain]) {
      expect(got.outputs).toEqual(outputs);
      expect(Object.getPrototypeOf(got.outputs[0])).toBe(Object.prototype);
    }
    expect(({} as Record<string, unknown>).sha256).toBeUndefined();
    expect(({} as Record<string, unknown>).bytes).toBeUndefined();
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  it('refuses a receipt with a __proto__ member as a schema breach, polluting nothing', () => {
    const text = canonicalJson(receipt()).replace('{', '{"__proto__":{"polluted":true},');
    expect(codeOf(() => decodeReceipt(Buffer.from(text), FILE))).toBe('EGJ_RECEIPT_SCHEMA');
    expect(codeOf(() => decodeSignedReceipt(envelopeOver(text), FILE, trustHost))).toBe('EGJ_RECEIPT_SCHEMA');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('decodeSignedReceipt rejects, each with its own code', () => {
  const signed = signReceipt(receipt(), host.privateKey, hostId);
  const canonicalText = canonicalJson(receipt());

  const cases: Array<{ name: string; bytes: () => Buffer; policy: ReceiptTrustPolicy; code: string }> = [
    {
      name: 'an envelope over the byte cap',
      bytes: () => Buffer.concat([signed, Buffer.alloc(MAX_RECEIPT_BYTES, 0x20)]),
      policy: trustHost,
      code: 'EGJ_RECEIPT_TOO_LARGE',
    },
    {
      name: 'a plain receipt over the byte cap',
      bytes: () => Buffer.alloc(MAX_RECEIPT_BYTES + 1, 0x20),
      policy: NO_TRUST,
      code: 'EGJ_RECEIPT_TOO_LARGE',
    },
    {
      name: 'a truncated envelope, keys trusted',
      bytes: () => signed.subarray(0, signed.length - 7),
      policy: trustHost,
      code: 'EGJ_ENVELOPE_MALFORMED',
    },
    {
      name: 'a truncated envelope, nothing trusted',
      bytes: () => signed.subarray(0, signed.length - 7),
      policy: NO_TRUST,
      code: 'EGJ_ENVELOPE_MALFORMED',
    },
    {
      name: 'an envelope with an extra field',
      bytes: () => mutateEnvelope(signed, (e) => (e.note = 'hi')),
      policy: trustHost,
      code: 'EGJ_ENVELOPE_MALFORMED',
    },
    {
      name: 'an envelope missing its payloadType',
      bytes: () => mutateEnvelope(signed, (e) => delete e.payloadType),
      policy: NO_TRUST,
      code: 'EGJ_ENVELOPE_MALFORMED',
    },
    {
      name: 'a payload in base64 wrapped with a line break',
      bytes: () =>
        mutateEnvelope(
          signed,
          (e) => (e.payload = `${(e.payload as string).slice(0, 76)}\n${(e.payload as string).slice(76)}`),
        ),
      policy: trustHost,
      code: 'EGJ_ENVELOPE_MALFORMED',
    },
    {
      name: 'a signature in url-safe base64',
      bytes: () =>
        mutateEnvelope(signed, (e) => {
          const s = (e.signatures as Array<{ sig: string }>)[0]!;
          s.sig = Buffer.from(s.sig, 'base64').toString('base64url');
        }),
      policy: trustHost,
      code: 'EGJ_ENVELOPE_MALFORMED',
    },
    {
      name: 'a signature entry with an extra field',
      bytes: () =>
        mutateEnvelope(signed, (e) => ((e.signatures as object[])[0] = { keyid: '', sig: '', x: 1 })),
      policy: trustHost,
      code: 'EGJ_ENVELOPE_MALFORMED',
    },
    {
      name: 'a tampered payload byte',
      bytes: () =>
        mutateEnvelope(signed, (e) => {
          const p = Buffer.from(e.payload as string, 'base64');
          p[p.indexOf('"epoch":1') + 8] = '2'.charCodeAt(0);
          e.payload = p.toString('base64');
        }),
      policy: trustHost,
      code: 'EGJ_SIGNATURE_INVALID',
    },
    {
      name: 'a swapped payload type (not re-signed)',
      bytes: () => mutateEnvelope(signed, (e) => (e.payloadType = 'application/json')),
      policy: trustHost,
      code: 'EGJ_SIGNATURE_INVALID',
    },
    {
      name: 'a valid signature by an untrusted key claiming the trusted key id',
      bytes: () => signReceipt(receipt(), attacker.privateKey, hostId),
      policy: trustHost,
      code: 'EGJ_SIGNATURE_INVALID',
    },
    {
      name: 'a receipt signed by a key that was removed from trust',
      bytes: () => signed,
      policy: { trusted: [{ name: 'new-box', publicKey: spare.publicKey }], requireSignature: false },
      code: 'EGJ_SIGNATURE_INVALID',
    },
    {
      name: 'an envelope when a signature is required but no key is trusted',
      bytes: () => signed,
      policy: requireOnly,
      code: 'EGJ_SIGNATURE_INVALID',
    },
    {
      name: 'an unsigned receipt once a key is trusted',
      bytes: () => canonicalBytes(receipt()),
      policy: trustHost,
      code: 'EGJ_SIGNATURE_MISSING',
    },
    {
      name: 'an unsigned receipt when signatures are required',
      bytes: () => canonicalBytes(receipt()),
      policy: requireOnly,
      code: 'EGJ_SIGNATURE_MISSING',
    },
    {
      name: 'an envelope with no signatures once a key is trusted',
      bytes: () => mutateEnvelope(signed, (e) => (e.signatures = [])),
      policy: trustHost,
      code: 'EGJ_SIGNATURE_MISSING',
    },
    {
      name: 'a correctly signed envelope of another payload type',
      bytes: () => envelopeOver(canonicalText, host.privateKey, 'application/vnd.in-toto+json'),
      policy: trustHost,
      code: 'EGJ_PAYLOAD_TYPE',
    },
    {
      name: 'a signed payload with a duplicate key',
      bytes: () => envelopeOver(canonicalText.replace('{"cached":false,', '{"cached":true,"cached":false,')),
      policy: trustHost,
      code: 'EGJ_PAYLOAD_NOT_CANONICAL',
    },
    {
      name: 'a signed payload with reordered keys',
      bytes: () => envelopeOver(JSON.stringify(Object.fromEntries(Object.entries(receipt()).reverse()))),
      policy: trustHost,
      code: 'EGJ_PAYLOAD_NOT_CANONICAL',
    },
    {
      name: 'a signed payload with the number 1.0',
      bytes: () => envelopeOver(canonicalText.replace('"epoch":1', '"epoch":1.0')),
      policy: trustHost,
      code: 'EGJ_PAYLOAD_NOT_CANONICAL',
    },
    {
      name: 'a signed payload with the number 1e0',
      bytes: () => envelopeOver(canonicalText.replace('"epoch":1', '"epoch":1e0')),
      policy: trustHost,
      code: 'EGJ_PAYLOAD_NOT_CANONICAL',
    },
    {
      name: 'a signed payload with insignificant whitespace',
      bytes: () => envelopeOver(`${canonicalText}\n`),
      policy: trustHost,
      code: 'EGJ_PAYLOAD_NOT_CANONICAL',
    },
    {
      name: 'a signed payload that is not JSON',
      bytes: () => envelopeOver('not json'),
      policy: trustHost,
      code: 'EGJ_PAYLOAD_NOT_CANONICAL',
    },
    {
      name: 'an unpinned envelope whose payload is not canonical',
      bytes: () => envelopeOver(canonicalText.replace('"epoch":1', '"epoch":1.0'), attacker.privateKey),
      policy: NO_TRUST,
      code: 'EGJ_PAYLOAD_NOT_CANONICAL',
    },
    {
      name: 'a signed, canonical payload that breaks the receipt schema',
      bytes: () => envelopeOver(canonicalJson({ ...receipt(), status: 'great' })),
      policy: trustHost,
      code: 'EGJ_RECEIPT_SCHEMA',
    },
    {
      name: 'a plain receipt that breaks the schema',
      bytes: () => canonicalBytes({ ...receipt(), extra: 1 }),
      policy: NO_TRUST,
      code: 'EGJ_RECEIPT_SCHEMA',
    },
  ];

  it.each(cases)('$name → $code', ({ bytes, policy, code }) => {
    expect(codeOf(() => decodeSignedReceipt(bytes(), FILE, policy))).toBe(code);
  });

  it('uses seven distinct codes for the seven rules', () => {
    expect(new Set(cases.map((c) => c.code)).size).toBe(7);
  });

  it('rejects every single-byte change to a signed payload', () => {
    const env = JSON.parse(signed.toString('utf8'));
    const payload = Buffer.from(env.payload, 'base64');
    fc.assert(
      fc.property(fc.nat(payload.length - 1), fc.integer({ min: 1, max: 255 }), (at, xor) => {
        const p = Buffer.from(payload);
        p[at]! ^= xor;
        const bytes = Buffer.from(JSON.stringify({ ...env, payload: p.toString('base64') }));
        expect(codeOf(() => decodeSignedReceipt(bytes, FILE, trustHost))).toBe('EGJ_SIGNATURE_INVALID');
      }),
      { numRuns: 200 },
    );
  });
});

describe('signReceipt', () => {
  it('refuses to sign a receipt that breaks its schema', () => {
    expect(() => signReceipt({ ...receipt(), epoch: 0 }, host.privateKey, hostId)).toThrow();
  });
});

describe('receipt-decode', () => {
  it('keeps decodeReceipt(bytes, file) returning a bare Receipt for plain and envelope input', () => {
    expect(decodeReceipt(canonicalBytes(receipt()), FILE)).toEqual(receipt());
    expect(decodeReceipt(signReceipt(receipt(), host.privateKey, hostId), FILE)).toEqual(receipt());
  });

  it('reports plain non-JSON as a schema failure, as before', () => {
    expect(codeOf(() => decodeReceipt(Buffer.from('{"cached": tru'), FILE))).toBe('EGJ_RECEIPT_SCHEMA');
  });

  it('applies the policy through decodeReceiptWithPolicy', () => {
    expect(
      decodeReceiptWithPolicy(signReceipt(receipt(), host.privateKey, hostId), FILE, trustHost).signer,
    ).toBe('free-box');
    expect(codeOf(() => decodeReceiptWithPolicy(canonicalBytes(receipt()), FILE, trustHost))).toBe(
      'EGJ_SIGNATURE_MISSING',
    );
  });
});
