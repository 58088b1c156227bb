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

/** The rejection `fn` throws: always a RejectedError (exit 3) naming the file. */
function rejectionOf(fn: () => unknown): RejectedError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RejectedError);
    expect((err as RejectedError).exitCode).toBe(3);
    expect((err as RejectedError).message).toContain(FILE);
    return err as RejectedError;
  }
  throw new Error('expected a rejection');
}

function codeOf(fn: () => unknown): string {
  return rejectionOf(fn).code;
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

  it('accepts an envelope and a signature entry whose fields come in any order (JSON objects are unordered)', () => {
    const env = JSON.parse(signReceipt(receipt(), host.privateKey, hostId).toString('utf8'));
    const [{ keyid, sig }] = env.signatures;
    const reordered = `{"signatures":[{"sig":"${sig}","keyid":"${keyid}"}],"payloadType":"${env.payloadType}","payload":"${env.payload}"}`;
    expect(decodeSignedReceipt(Buffer.from(reordered), FILE, trustHost)).toEqual({
      receipt: receipt(),
      signer: 'free-box',
    });
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
      name: 'an output whose executable flag is anything but true (absent means not made executable)',
      bytes: () =>
        canonicalBytes({
          ...receipt(),
          outputs: [{ path: 'src/a.py', sha256: 'a'.repeat(64), bytes: 1, executable: false }],
        }),
      policy: NO_TRUST,
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

/** What JSON.parse says about `text`: the reason a rejection quotes. */
function jsonParseError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${text} parses`);
}

/** An envelope over raw payload bytes (which may be invalid UTF-8), signed by the host key. */
function envelopeOverBytes(payload: Buffer): Buffer {
  return canonicalBytes(signEnvelope(RECEIPT_PAYLOAD_TYPE, payload, host.privateKey, hostId));
}

describe('decodeSignedReceipt tells the user which rule failed, in words', () => {
  const signed = signReceipt(receipt(), host.privateKey, hostId);
  const canonicalText = canonicalJson(receipt());
  const INVALID_UTF8 = 'The encoded data was not valid for encoding utf-8';
  const said = (bytes: Buffer, policy: ReceiptTrustPolicy) => {
    const err = rejectionOf(() => decodeSignedReceipt(bytes, FILE, policy));
    expect(err.file).toBe(FILE);
    return `${err.code} ${err.message}`;
  };
  const shape = (rule: string) => `EGJ_ENVELOPE_MALFORMED ${FILE}: signed envelope is malformed: ${rule}`;
  const withSignatures = (signatures: unknown[]) =>
    mutateEnvelope(signed, (e) => (e.signatures = signatures));
  const goodSignature = () =>
    JSON.parse(signed.toString('utf8')).signatures[0] as { keyid: string; sig: string };

  it('gives the size and the cap of a receipt over the cap', () => {
    expect(said(Buffer.alloc(MAX_RECEIPT_BYTES + 1, 0x20), NO_TRUST)).toBe(
      `EGJ_RECEIPT_TOO_LARGE ${FILE}: receipt is ${MAX_RECEIPT_BYTES + 1} bytes, over the ${MAX_RECEIPT_BYTES} cap`,
    );
  });

  it('accepts a receipt of exactly the cap', () => {
    const text = canonicalBytes(receipt());
    const atCap = Buffer.concat([text, Buffer.alloc(MAX_RECEIPT_BYTES - text.length, 0x20)]);
    expect(decodeSignedReceipt(atCap, FILE, NO_TRUST).receipt).toEqual(receipt());
  });

  it('quotes the JSON error of a truncated envelope, and of plain text that is not JSON', () => {
    const cut = signed.subarray(0, signed.length - 7);
    expect(said(cut, trustHost)).toBe(
      `EGJ_ENVELOPE_MALFORMED ${FILE}: signed envelope is not JSON (${jsonParseError(cut.toString('utf8'))})`,
    );
    expect(said(Buffer.from('hello'), requireOnly)).toBe(
      `EGJ_ENVELOPE_MALFORMED ${FILE}: signed envelope is not JSON (${jsonParseError('hello')})`,
    );
    expect(said(Buffer.from('{"cached": tru'), NO_TRUST)).toBe(
      `EGJ_RECEIPT_SCHEMA ${FILE}: receipt is not JSON (${jsonParseError('{"cached": tru')})`,
    );
  });

  it.each([
    '{"payload":"e30=",',
    '{"payloadType":"x",',
    '{"signatures":[',
    '\n  {\n  "signatures": [',
    ' { "payload" ',
  ])(
    'calls unparseable text that starts like an envelope (%j) a malformed envelope even when nothing is trusted',
    (text) => {
      expect(said(Buffer.from(text), NO_TRUST)).toMatch(
        /^EGJ_ENVELOPE_MALFORMED .*: signed envelope is not JSON \(/,
      );
    },
  );

  it.each([
    '{"schema":"genjob/receipt@1",',
    'x{"payload":"e30=",',
    '{"payloads":',
    '{"cached":"payload",',
    '',
  ])(
    'calls unparseable text that does not start like an envelope (%j) a receipt that is not JSON',
    (text) => {
      expect(said(Buffer.from(text), NO_TRUST)).toMatch(/^EGJ_RECEIPT_SCHEMA .*: receipt is not JSON \(/);
    },
  );

  it('refuses invalid UTF-8 and a byte order mark instead of repairing them', () => {
    const text = canonicalBytes(receipt());
    const at = text.indexOf('"box"') + 2;
    const broken = Buffer.concat([text.subarray(0, at), Buffer.from([0xff]), text.subarray(at + 1)]);
    expect(said(broken, NO_TRUST)).toBe(`EGJ_RECEIPT_SCHEMA ${FILE}: receipt is not JSON (${INVALID_UTF8})`);
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text]);
    expect(said(bom, NO_TRUST)).toBe(
      `EGJ_RECEIPT_SCHEMA ${FILE}: receipt is not JSON (${jsonParseError(`\ufeff${text.toString('utf8')}`)})`,
    );
    const payload = Buffer.from(canonicalText);
    payload[payload.indexOf('"box"') + 2] = 0xff;
    expect(said(envelopeOverBytes(payload), trustHost)).toBe(
      `EGJ_PAYLOAD_NOT_CANONICAL ${FILE}: signed payload is not UTF-8 JSON (${INVALID_UTF8})`,
    );
  });

  it('says how many keys are trusted, or that a signature is required, when a receipt is unsigned', () => {
    const plain = canonicalBytes(receipt());
    expect(said(plain, trustHost)).toBe(
      `EGJ_SIGNATURE_MISSING ${FILE}: receipt is not signed, but 2 key(s) are trusted (see genjob-trust.json)`,
    );
    expect(said(plain, requireOnly)).toBe(
      `EGJ_SIGNATURE_MISSING ${FILE}: receipt is not signed, but a signature is required (see genjob-trust.json)`,
    );
    expect(said(withSignatures([]), trustHost)).toBe(
      `EGJ_SIGNATURE_MISSING ${FILE}: envelope carries no signature, but signatures are required`,
    );
  });

  it.each([
    { name: 'only a payload', doc: { payload: 'e30=' }, has: 'payload' },
    { name: 'only a payloadType', doc: { payloadType: RECEIPT_PAYLOAD_TYPE }, has: 'payloadType' },
    { name: 'only signatures', doc: { signatures: [] }, has: 'signatures' },
  ])('treats an object with $name as an envelope, and names the fields it has', ({ doc, has }) => {
    expect(said(canonicalBytes(doc), NO_TRUST)).toBe(
      shape(`must have exactly payloadType, payload, signatures (has ${has})`),
    );
  });

  it('names each envelope field that has the wrong type or form', () => {
    expect(
      said(
        mutateEnvelope(signed, (e) => (e.note = 1)),
        trustHost,
      ),
    ).toBe(
      shape('must have exactly payloadType, payload, signatures (has note,payload,payloadType,signatures)'),
    );
    expect(
      said(
        mutateEnvelope(signed, (e) => (e.payloadType = 1)),
        trustHost,
      ),
    ).toBe(shape('payloadType is not a string'));
    expect(
      said(
        mutateEnvelope(signed, (e) => (e.payload = 1)),
        trustHost,
      ),
    ).toBe(shape('payload is not a string'));
    expect(
      said(
        mutateEnvelope(signed, (e) => (e.payload = 'e30')),
        trustHost,
      ),
    ).toBe(shape('payload is not canonical base64 (standard alphabet, padded)'));
    expect(
      said(
        mutateEnvelope(signed, (e) => (e.signatures = {})),
        trustHost,
      ),
    ).toBe(shape('signatures is not an array'));
  });

  it('names the signature entry that is malformed, by its index', () => {
    const good = goodSignature();
    expect(said(withSignatures([good, { keyid: 'k' }]), trustHost)).toBe(
      shape('signatures[1] must have exactly keyid and sig'),
    );
    expect(said(withSignatures([good, null]), trustHost)).toBe(
      shape('signatures[1] must have exactly keyid and sig'),
    );
    expect(said(withSignatures([good, [good.keyid, good.sig]]), trustHost)).toBe(
      shape('signatures[1] must have exactly keyid and sig'),
    );
    expect(said(withSignatures([good, { keyid: 7, sig: good.sig }]), trustHost)).toBe(
      shape('signatures[1].keyid is not a short string'),
    );
    expect(said(withSignatures([good, { keyid: 'k', sig: 7 }]), trustHost)).toBe(
      shape('signatures[1].sig is not canonical base64'),
    );
    expect(said(withSignatures([good, { keyid: 'k', sig: 'e30' }]), trustHost)).toBe(
      shape('signatures[1].sig is not canonical base64'),
    );
  });

  it('takes up to 16 signatures and keyids up to 256 characters, and refuses one more', () => {
    const good = goodSignature();
    const filler = { keyid: 'x'.repeat(256), sig: Buffer.alloc(64).toString('base64') };
    expect(
      decodeSignedReceipt(withSignatures([...Array(15).fill(filler), good]), FILE, trustHost).signer,
    ).toBe('free-box');
    expect(said(withSignatures([...Array(16).fill(filler), good]), trustHost)).toBe(
      shape('more than 16 signatures'),
    );
    expect(said(withSignatures([good, { ...filler, keyid: 'x'.repeat(257) }]), trustHost)).toBe(
      shape('signatures[1].keyid is not a short string'),
    );
  });

  it('lists the claimed keyids of a signature no trusted key verifies, (none) for an empty one', () => {
    const bad = JSON.parse(signReceipt(receipt(), attacker.privateKey, '').toString('utf8')).signatures[0];
    expect(said(withSignatures([{ ...bad, keyid: 'mallory' }, bad]), trustHost)).toBe(
      `EGJ_SIGNATURE_INVALID ${FILE}: no trusted key verifies the signature (claimed keyid mallory, (none)); trust the host's key with genjob trust add`,
    );
  });

  it('quotes the first 100 characters of a foreign payload type', () => {
    const type = `application/${'x'.repeat(150)}`;
    const bytes = canonicalBytes(signEnvelope(type, Buffer.from(canonicalText), host.privateKey, hostId));
    expect(said(bytes, trustHost)).toBe(
      `EGJ_PAYLOAD_TYPE ${FILE}: payload type is ${JSON.stringify(type.slice(0, 100))}, expected ${RECEIPT_PAYLOAD_TYPE}`,
    );
  });

  it('says what canonical means when the payload bytes are not canonical, including a number JSON cannot hold', () => {
    const rule =
      'signed payload bytes are not canonical JSON (RFC 8785: sorted unique keys, no whitespace, shortest numbers)';
    expect(said(envelopeOver(`${canonicalText} `), trustHost)).toBe(
      `EGJ_PAYLOAD_NOT_CANONICAL ${FILE}: ${rule}`,
    );
    expect(said(envelopeOver(canonicalText.replace('"epoch":1', '"epoch":1e400')), trustHost)).toBe(
      `EGJ_PAYLOAD_NOT_CANONICAL ${FILE}: ${rule}`,
    );
    expect(said(envelopeOver('not json'), trustHost)).toBe(
      `EGJ_PAYLOAD_NOT_CANONICAL ${FILE}: signed payload is not UTF-8 JSON (${jsonParseError('not json')})`,
    );
  });

  it('names the schema path that breaks, or (document) when the whole value is wrong', () => {
    expect(said(envelopeOver(canonicalJson({ ...receipt(), status: 'great' })), trustHost)).toBe(
      `EGJ_RECEIPT_SCHEMA ${FILE}: receipt breaks its schema at status: Invalid option: expected one of "ok"|"rejected"|"aborted"`,
    );
    const outputs = [{ path: 'a', sha256: 'nope', bytes: 1 }];
    expect(said(canonicalBytes({ ...receipt(), outputs }), NO_TRUST)).toMatch(
      new RegExp(`^EGJ_RECEIPT_SCHEMA ${FILE}: receipt breaks its schema at outputs\\.0\\.sha256: .`),
    );
    expect(said(Buffer.from('null'), NO_TRUST)).toBe(
      `EGJ_RECEIPT_SCHEMA ${FILE}: receipt breaks its schema at (document): Invalid input: expected object, received null`,
    );
    expect(said(Buffer.from('[]'), NO_TRUST)).toMatch(/breaks its schema at \(document\): /);
  });
});
