import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GenjobError } from '../../src/core/errors.js';
import type { Receipt } from '../../src/core/receipt.js';
import { decodeReceiptWithPolicy } from '../../src/core/receipt-decode.js';
import { signReceipt } from '../../src/core/receipt-envelope.js';
import { keyIdOf, publicKeyString } from '../../src/trust/keys.js';
import {
  addTrustedKey,
  loadTrustPolicy,
  readTrust,
  removeTrustedKey,
  TRUST_FILE,
  trustedFor,
} from '../../src/trust/trust-file.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'genjob-trust-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const pair = () => generateKeyPairSync('ed25519');
const A = pair();
const B = pair();
const keyA = publicKeyString(A.publicKey);
const keyB = publicKeyString(B.publicKey);
const NOW = new Date('2026-02-03T04:05:06.000Z');

function error(fn: () => unknown): GenjobError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GenjobError);
    return err as GenjobError;
  }
  throw new Error('expected an error');
}

describe('readTrust', () => {
  it('hostile: a trust file committed as a symbolic link (to /dev/zero, or to a file elsewhere) is refused at once, never read through', () => {
    // one to /dev/zero hung every command that loads the policy from the checkout, reading without end
    symlinkSync('/dev/zero', join(root, TRUST_FILE));
    const zero = error(() => readTrust(root));
    expect(zero.code).toBe('EGJ_TRUST_FILE');
    expect(zero.message).toContain('symbolic link');
    rmSync(join(root, TRUST_FILE));
    const elsewhere = join(root, 'elsewhere.json');
    writeFileSync(elsewhere, `${JSON.stringify({ schema: 'genjob/trust@1', keys: [] })}\n`);
    symlinkSync(elsewhere, join(root, TRUST_FILE));
    expect(error(() => readTrust(root)).code).toBe('EGJ_TRUST_FILE');
  });

  it('hostile: a trust file larger than its cap is refused without reading all of it', () => {
    writeFileSync(join(root, TRUST_FILE), Buffer.alloc(1024 * 1024 + 1, 0x20));
    const big = error(() => readTrust(root));
    expect(big.code).toBe('EGJ_TRUST_FILE');
    expect(big.message).toContain('larger than 1048576 bytes');
  });

  it('returns no keys when the trust file is missing', () => {
    expect(readTrust(root)).toEqual([]);
  });

  const malformed: Array<{ name: string; text: string; rule: string }> = [
    { name: 'not JSON', text: '{', rule: 'not JSON' },
    { name: 'another schema', text: '{"schema":"genjob/trust@2","keys":[]}', rule: 'schema' },
    {
      name: 'an unknown top-level field',
      text: '{"schema":"genjob/trust@1","keys":[],"x":1}',
      rule: '(document)',
    },
    {
      name: 'an upper-case name',
      text: JSON.stringify({
        schema: 'genjob/trust@1',
        keys: [{ name: 'Box', key: keyA, added: '2026-01-01' }],
      }),
      rule: 'keys.0.name',
    },
    {
      name: 'a key that does not parse',
      text: JSON.stringify({
        schema: 'genjob/trust@1',
        keys: [{ name: 'box', key: 'ed25519:AAAA', added: '2026-01-01' }],
      }),
      rule: "key 'box'",
    },
    {
      name: 'a duplicate name',
      text: JSON.stringify({
        schema: 'genjob/trust@1',
        keys: [
          { name: 'box', key: keyA, added: '2026-01-01' },
          { name: 'box', key: keyB, added: '2026-01-01' },
        ],
      }),
      rule: 'appears twice',
    },
    {
      name: 'the same key under two names',
      text: JSON.stringify({
        schema: 'genjob/trust@1',
        keys: [
          { name: 'a', key: keyA, added: '2026-01-01' },
          { name: 'b', key: keyA, added: '2026-01-01' },
        ],
      }),
      rule: 'another name',
    },
    {
      name: 'a missing added date',
      text: JSON.stringify({ schema: 'genjob/trust@1', keys: [{ name: 'a', key: keyA }] }),
      rule: 'keys.0.added',
    },
  ];
  it.each(malformed)('refuses a file with $name, naming the file and the rule', ({ text, rule }) => {
    writeFileSync(join(root, TRUST_FILE), text);
    const err = error(() => readTrust(root));
    expect(err.code).toBe('EGJ_TRUST_FILE');
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain(join(root, TRUST_FILE));
    expect(err.message).toContain(rule);
  });
});

describe('addTrustedKey / removeTrustedKey', () => {
  it('writes the documented format, sorted by name, ending in a newline', () => {
    addTrustedKey(root, 'free-box', keyB, NOW);
    addTrustedKey(root, 'a.box_2', keyA, NOW);
    const text = readFileSync(join(root, TRUST_FILE), 'utf8');
    expect(JSON.parse(text)).toEqual({
      schema: 'genjob/trust@1',
      keys: [
        { name: 'a.box_2', key: keyA, added: NOW.toISOString() },
        { name: 'free-box', key: keyB, added: NOW.toISOString() },
      ],
    });
    expect(text.endsWith('}\n')).toBe(true);
    expect(readdirSync(root)).toEqual([TRUST_FILE]);
  });

  it('treats the same name and key again as a no-op', () => {
    expect(addTrustedKey(root, 'box', keyA, NOW)).toEqual({
      added: true,
      name: 'box',
      key: keyA,
      keyid: keyIdOf(A.publicKey),
    });
    const before = readFileSync(join(root, TRUST_FILE));
    expect(addTrustedKey(root, 'box', keyA).added).toBe(false);
    expect(readFileSync(join(root, TRUST_FILE))).toEqual(before);
  });

  const refusals: Array<{
    name: string;
    first?: [string, string];
    add: [string, string];
    code: string;
    exit: number;
  }> = [
    {
      name: 'a name already bound to another key',
      first: ['box', keyA],
      add: ['box', keyB],
      code: 'EGJ_TRUST_NAME_TAKEN',
      exit: 4,
    },
    {
      name: 'a key already trusted under another name',
      first: ['box', keyA],
      add: ['box2', keyA],
      code: 'EGJ_TRUST_KEY_DUPLICATE',
      exit: 4,
    },
    { name: 'a name with upper case', add: ['Box', keyA], code: 'EGJ_TRUST_NAME', exit: 2 },
    { name: 'a name with a slash', add: ['a/b', keyA], code: 'EGJ_TRUST_NAME', exit: 2 },
    { name: 'an empty name', add: ['', keyA], code: 'EGJ_TRUST_NAME', exit: 2 },
    { name: 'a malformed key', add: ['box', 'ssh-ed25519 AAAA'], code: 'EGJ_KEY_INVALID', exit: 2 },
  ];
  it.each(refusals)('refuses $name ($code)', ({ first, add, code, exit }) => {
    if (first) addTrustedKey(root, first[0], first[1], NOW);
    const before = first ? readFileSync(join(root, TRUST_FILE), 'utf8') : undefined;
    const err = error(() => addTrustedKey(root, add[0], add[1], NOW));
    expect(err.code).toBe(code);
    expect(err.exitCode).toBe(exit);
    if (before !== undefined) expect(readFileSync(join(root, TRUST_FILE), 'utf8')).toBe(before);
  });

  it('removes a key by name and refuses an unknown name', () => {
    addTrustedKey(root, 'old', keyA, NOW);
    addTrustedKey(root, 'new', keyB, NOW);
    expect(removeTrustedKey(root, 'old').key).toBe(keyA);
    expect(readTrust(root).map((e) => e.name)).toEqual(['new']);
    const err = error(() => removeTrustedKey(root, 'old'));
    expect(err.code).toBe('EGJ_TRUST_UNKNOWN_NAME');
    expect(err.message).toContain('new');
  });
});

describe('loadTrustPolicy', () => {
  const receipt: Receipt = {
    schema: 'genjob/receipt@1',
    key: 'a'.repeat(64),
    job_digest: 'b'.repeat(64),
    epoch: 1,
    status: 'ok',
    outputs: [],
    reason: null,
    worker: { id: 'w', host: 'h' },
    generator: { command: 'g', version: null },
    timings: { started_at: 't0', finished_at: 't1', generate_ms: 0 },
    cached: false,
  };

  it('follows a key rotation: old key accepted, then both, then only the new one', () => {
    const byOld = signReceipt(receipt, A.privateKey, keyIdOf(A.publicKey));
    const byNew = signReceipt(receipt, B.privateKey, keyIdOf(B.publicKey));
    const signer = (bytes: Buffer) => {
      try {
        return decodeReceiptWithPolicy(bytes, 'r.json', loadTrustPolicy(root)).signer;
      } catch (err) {
        return (err as GenjobError).code;
      }
    };
    addTrustedKey(root, 'old', keyA, NOW);
    expect([signer(byOld), signer(byNew)]).toEqual(['old', 'EGJ_SIGNATURE_INVALID']);
    addTrustedKey(root, 'new', keyB, NOW);
    expect([signer(byOld), signer(byNew)]).toEqual(['old', 'new']);
    removeTrustedKey(root, 'old');
    expect([signer(byOld), signer(byNew)]).toEqual(['EGJ_SIGNATURE_INVALID', 'new']);
  });

  it('carries requireSignature through', () => {
    expect(loadTrustPolicy(root, { requireSignature: true })).toEqual({
      trusted: [],
      requireSignature: true,
    });
  });
});

describe('keys pinned for checks', () => {
  it('a key pinned only for checks never verifies a receipt; one for both does', () => {
    addTrustedKey(root, 'ci', keyA, NOW, ['checks']);
    addTrustedKey(root, 'host', keyB, NOW, ['receipts']);
    expect(JSON.parse(readFileSync(join(root, TRUST_FILE), 'utf8')).keys).toEqual([
      { name: 'ci', key: keyA, added: NOW.toISOString(), for: ['checks'] },
      { name: 'host', key: keyB, added: NOW.toISOString() },
    ]);
    expect(loadTrustPolicy(root).trusted.map((k) => k.name)).toEqual(['host']);
    expect(trustedFor(readTrust(root), 'checks').map((k) => k.name)).toEqual(['ci']);
    removeTrustedKey(root, 'host');
    addTrustedKey(root, 'host', keyB, NOW, ['receipts', 'checks']);
    expect(trustedFor(readTrust(root), 'checks').map((k) => k.name)).toEqual(['ci', 'host']);
    expect(trustedFor(readTrust(root), 'receipts').map((k) => k.name)).toEqual(['host']);
  });

  it('the same name and key pinned for something else is a conflict, not a silent change', () => {
    addTrustedKey(root, 'ci', keyA, NOW, ['checks']);
    expect(addTrustedKey(root, 'ci', keyA, NOW, ['checks']).added).toBe(false);
    const err = error(() => addTrustedKey(root, 'ci', keyA, NOW));
    expect(err.code).toBe('EGJ_TRUST_NAME_TAKEN');
    expect(err.message).toMatch(/'ci' is pinned for checks; remove it first/);
  });

  it('refuses an unknown use in the file', () => {
    writeFileSync(
      join(root, TRUST_FILE),
      JSON.stringify({
        schema: 'genjob/trust@1',
        keys: [{ name: 'x', key: keyA, added: '2026-01-01', for: ['apply'] }],
      }),
    );
    expect(error(() => readTrust(root)).code).toBe('EGJ_TRUST_FILE');
  });
});
