import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  buildStatement,
  CHECK_SCHEMA,
  type CheckFacts,
  decodeRecord,
  encodeRecord,
  INTOTO_PAYLOAD_TYPE,
  MAX_CHECK_RECORD_BYTES,
  resultOf,
  STATEMENT_TYPE,
  TEST_RESULT_TYPE,
} from '../../src/check/record.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { signEnvelope } from '../../src/core/dsse.js';

const H = (c: string) => c.repeat(64);
const facts = (over: Partial<CheckFacts> = {}): CheckFacts => ({
  schema: CHECK_SCHEMA,
  key: H('a'),
  checker: 'tests',
  kind: 'command',
  receipt_sha256: H('b'),
  binding_sha256: H('c'),
  base_tree: 'd'.repeat(40),
  result_tree: 'e'.repeat(40),
  verdict: 'flaky',
  marks: '✗✓',
  sequence: 2,
  previous: H('f'),
  attempts: (['fail', 'pass'] as const).map((outcome, i) => ({
    n: i + 1,
    outcome,
    exit_code: outcome === 'pass' ? 0 : 1,
    signal: null,
    timed_out: false,
    ms: 10,
    log_sha256: H('0'),
    log_bytes: 3,
    why: null,
    started_at: '2026-01-01T00:00:00.000Z',
  })),
  setup: null,
  judge: null,
  sandbox: { kind: 'bwrap', network: false },
  started_at: 's',
  finished_at: 'f',
  machine: 'm',
  ...over,
});
const OUT = [{ path: 'src/a.py', sha256: H('1') }];
const keyPair = () => generateKeyPairSync('ed25519');

describe('buildStatement', () => {
  it('is an in-toto v1 Statement with the test-result predicate and genjob’s facts', () => {
    const s = buildStatement(facts(), OUT);
    expect(s._type).toBe(STATEMENT_TYPE);
    expect(s.predicateType).toBe(TEST_RESULT_TYPE);
    expect(s.subject).toEqual([
      { name: `genjob-receipt:${H('a')}`, digest: { sha256: H('b') } },
      { name: 'src/a.py', digest: { sha256: H('1') } },
      { name: 'genjob-result-tree', digest: { gitTree: 'e'.repeat(40) } },
    ]);
    expect(s.predicate).toMatchObject({
      result: 'WARNED',
      configuration: [{ name: 'genjob.config.json#checkers.tests', digest: { sha256: H('c') } }],
      passedTests: ['tests#2'],
      failedTests: ['tests#1'],
      warnedTests: [],
    });
  });

  it('maps verdicts to results: only pass PASSED, only fail FAILED', () => {
    expect(['pass', 'fail', 'flaky', 'uncertain', 'error'].map((v) => resultOf(v as never))).toEqual([
      'PASSED',
      'FAILED',
      'WARNED',
      'WARNED',
      'WARNED',
    ]);
  });
});

describe('decodeRecord', () => {
  it('reads back what encodeRecord wrote, unsigned', () => {
    const bytes = encodeRecord(buildStatement(facts(), OUT));
    const d = decodeRecord(bytes, 'f', []);
    expect(d).toMatchObject({ signer: null, signed: false });
    expect(d.facts.verdict).toBe('flaky');
  });

  it('a signed record names the pinned key that verifies it', () => {
    const { privateKey, publicKey } = keyPair();
    const bytes = encodeRecord(buildStatement(facts(), OUT), { key: privateKey, keyid: 'k1' });
    expect(JSON.parse(bytes.toString()).payloadType).toBe(INTOTO_PAYLOAD_TYPE);
    expect(decodeRecord(bytes, 'f', [{ name: 'ci', publicKey }])).toMatchObject({
      signer: 'ci',
      signed: true,
    });
    // no key pinned: read, signer not asked for
    expect(decodeRecord(bytes, 'f', [])).toMatchObject({ signer: null, signed: true });
  });

  const refusals: Array<{
    name: string;
    bytes: () => Buffer;
    trusted?: 'other' | 'right';
    code: string;
    message: RegExp;
  }> = [
    {
      name: 'an unsigned record when a key is pinned for checks',
      bytes: () => encodeRecord(buildStatement(facts(), OUT)),
      trusted: 'right',
      code: 'EGJ_CHECK_SIGNATURE',
      message: /^f: not signed, but keys are pinned for checks/,
    },
    {
      name: 'a record signed by a key not pinned (forged)',
      bytes: () => encodeRecord(buildStatement(facts(), OUT), { key: keyPair().privateKey, keyid: 'k' }),
      trusted: 'right',
      code: 'EGJ_CHECK_SIGNATURE',
      message: /^f: no key pinned for checks verifies its signature/,
    },
    {
      name: 'a Statement whose verdict does not follow from its attempts (forged)',
      bytes: () => encodeRecord(buildStatement(facts({ verdict: 'pass' }), OUT)),
      code: 'EGJ_CHECK_RECORD',
      message: /it says pass, but its attempts make it flaky/,
    },
    {
      name: 'non-canonical bytes',
      bytes: () => Buffer.from(JSON.stringify(buildStatement(facts(), OUT), null, 1)),
      code: 'EGJ_CHECK_RECORD',
      message: /not canonical JSON/,
    },
    {
      name: 'not JSON',
      bytes: () => Buffer.from('{"x":'),
      code: 'EGJ_CHECK_RECORD',
      message: /the file is not UTF-8 JSON/,
    },
    {
      name: 'another predicate type',
      bytes: () =>
        canonicalBytes({ ...buildStatement(facts(), OUT), predicateType: 'https://slsa.dev/provenance/v1' }),
      code: 'EGJ_CHECK_RECORD',
      message: /at predicateType/,
    },
    {
      name: 'a facts field out of shape',
      bytes: () => encodeRecord(buildStatement(facts({ key: 'nope' }), OUT)),
      code: 'EGJ_CHECK_RECORD',
      message: /at predicate.genjob.key/,
    },
    {
      name: 'an envelope of another payload type',
      bytes: () =>
        canonicalBytes(
          signEnvelope(
            'application/json',
            canonicalBytes(buildStatement(facts(), OUT)),
            keyPair().privateKey,
            'k',
          ),
        ),
      code: 'EGJ_CHECK_RECORD',
      message: /payload type "application\/json"/,
    },
    {
      name: 'a record over the size cap',
      bytes: () => Buffer.alloc(MAX_CHECK_RECORD_BYTES + 1, 32),
      code: 'EGJ_CHECK_RECORD',
      message: /over the cap/,
    },
    {
      name: 'an envelope with extra fields',
      bytes: () =>
        Buffer.from(JSON.stringify({ payloadType: INTOTO_PAYLOAD_TYPE, payload: '', signatures: [], x: 1 })),
      code: 'EGJ_ENVELOPE_MALFORMED',
      message: /exactly payloadType, payload, signatures/,
    },
  ];
  for (const c of refusals)
    it(`refuses ${c.name}`, () => {
      const right = keyPair();
      const trusted = c.trusted ? [{ name: 'ci', publicKey: right.publicKey }] : [];
      let err: unknown;
      try {
        decodeRecord(c.bytes(), 'f', trusted);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: c.code, exitCode: 3 });
      expect((err as Error).message).toMatch(c.message);
    });

  it('a record signed by one of several pinned keys verifies against it', () => {
    const a = keyPair();
    const b = keyPair();
    const bytes = encodeRecord(buildStatement(facts({ verdict: 'flaky' }), OUT), {
      key: b.privateKey,
      keyid: 'whatever',
    });
    expect(
      decodeRecord(bytes, 'f', [
        { name: 'a', publicKey: a.publicKey },
        { name: 'b', publicKey: b.publicKey },
      ]).signer,
    ).toBe('b');
  });
});
