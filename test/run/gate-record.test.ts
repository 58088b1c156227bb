// Gate records (src/run/gate-record.ts): the evidence digest equals the canonical form's, a record is
// written once per distinct decision (same evidence and policy: nothing new; a new receipt or check
// record, or a receipt that stopped verifying: the next number), a signed record is a DSSE envelope a public key verifies, and a record that
// is not one (wrong schema, payload type, tampered payload) is refused.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { verifyPae } from '../../src/core/dsse.js';
import type { GenjobError } from '../../src/core/errors.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { decideGate, type GatePolicy, type KeyRecords } from '../../src/run/gate-decision.js';
import {
  buildGateRecord,
  evidenceDigest,
  evidenceOf,
  GATE_PAYLOAD_TYPE,
  gatesDir,
  newestGate,
  parseGateRecord,
  sameGate,
  writeGate,
} from '../../src/run/gate-record.js';
import { gateSealed } from '../../src/run/gate-seal.js';
import { runsDir } from '../../src/run/run-name.js';
import { tempDir, tempStore } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

const RUN = { name: 'r', revision: 1, id: 'r' };
const POLICY: GatePolicy = {
  requireChecks: ['tests'],
  minPass: { num: 1, den: 2 },
  maxFail: null,
  allowFlaky: false,
};
const POLICY_DOC = {
  require_checks: ['tests'],
  min_pass: { num: 1, den: 2 },
  max_fail: 3,
  allow_flaky: false,
};
const ok = (key: string, receipt: string, check: string): KeyRecords => ({
  key,
  current: key,
  outcome: { kind: 'receipt', status: 'ok', receiptDigest: receipt, problem: null },
  liveLease: false,
  checks: [{ checker: 'tests', verdict: 'pass', current: true, recordDigest: check }],
});
const dead: KeyRecords = {
  key: 'k3',
  current: 'k3',
  outcome: { kind: 'dead', name: 'k3.job.1-ab', code: 'EGJ_CANCELLED', reason: 'x' },
  liveLease: false,
  checks: [],
};

function closed(records: KeyRecords[], policy = POLICY) {
  const d = decideGate(records, policy);
  if (d.state !== 'closed') throw new Error('open');
  return buildGateRecord(RUN, 'm'.repeat(64), policy, d, records);
}

describe('the evidence of a gate', () => {
  it('digests to the sha256 of its canonical JSON, odd strings included', () => {
    const records = [ok('k1', 'r"\u2028é\\', 'c1'), { ...ok('k2', 'r2', 'c2'), checks: [] }, dead];
    const evidence = evidenceOf(records);
    expect(evidenceDigest(evidence)).toBe(sha256Hex(canonicalBytes(evidence)));
    expect(evidence[2]).toEqual({
      checks: [],
      current: 'k3',
      dead: 'dead/k3.job.1-ab',
      key: 'k3',
      receipt: null,
      verifies: null,
    });
  });

  it('says nothing of verifying for a receipt that is not ok (it passes no gate either way)', () => {
    const aborted: KeyRecords = {
      ...ok('k1', 'r1', 'c1'),
      outcome: { kind: 'receipt', status: 'aborted', receiptDigest: 'r1', problem: null },
    };
    expect(evidenceOf([aborted])[0]!.verifies).toBeNull();
  });

  it('changes when an ok receipt stops verifying, though its bytes are the same (an output edited)', () => {
    const good = ok('k1', 'r1', 'c1');
    const edited: KeyRecords = {
      ...good,
      outcome: { kind: 'receipt', status: 'ok', receiptDigest: 'r1', problem: 'EGJ_ARTIFACT_DRIFT: x' },
      checks: [],
    };
    expect(evidenceOf([good, edited]).map((e) => e.verifies)).toEqual([true, false]);
    expect(evidenceDigest(evidenceOf([{ ...good, checks: [] }]))).not.toBe(
      evidenceDigest(evidenceOf([edited])),
    );
    // so a gate closing over it again writes the next record, not the one that passed it
    const store = tempStore('genjob-gate-');
    const met = writeGate(store, RUN, closed([good, dead]));
    const now = writeGate(store, RUN, closed([edited, dead]));
    expect([met.record.verdict, now.record.verdict, now.seq, now.fresh]).toEqual(['met', 'not-met', 2, true]);
  });

  it('changes when a check record it used goes stale, though the record file is the same', () => {
    const fresh = ok('k1', 'r1', 'c1');
    const gone = { ...fresh, checks: [{ ...fresh.checks[0]!, current: false }] };
    expect(evidenceDigest(evidenceOf([gone]))).not.toBe(evidenceDigest(evidenceOf([fresh])));
    expect(evidenceOf([gone])[0]!.checks).toEqual([
      { checker: 'tests', current: false, record: 'c1', verdict: 'pass' },
    ]);
  });

  it('names every receipt and check record the verdict used, and why a key failed', () => {
    const record = closed([ok('k1', 'r1', 'c1'), dead]);
    expect(record).toMatchObject({
      schema: 'genjob/gate@1',
      run: 'r',
      verdict: 'met',
      passed: 1,
      total: 2,
      rate: '1/2 = 50.0%',
      policy: { require_checks: ['tests'], min_pass: { num: 1, den: 2 }, max_fail: null, allow_flaky: false },
      keys: [
        {
          key: 'k1',
          receipt: 'r1',
          checks: [{ checker: 'tests', verdict: 'pass', record: 'c1' }],
          pass: true,
        },
        { key: 'k3', dead: 'dead/k3.job.1-ab', pass: false, why: 'dead: EGJ_CANCELLED' },
      ],
    });
    expect('why' in record.keys[0]!).toBe(false);
  });
});

describe('writing gate records', () => {
  it('writes one record per distinct decision, numbered, never rewritten', () => {
    const store = tempStore('genjob-gate-');
    const a = writeGate(store, RUN, closed([ok('k1', 'r1', 'c1'), dead]));
    expect([a.seq, a.fresh, a.signed]).toEqual([1, true, false]);
    const bytes = readFileSync(a.file);
    expect(sha256Hex(bytes)).toBe(a.sha256);
    // the same evidence and policy later: nothing new
    const again = writeGate(store, RUN, { ...closed([ok('k1', 'r1', 'c1'), dead]), closed_at: 'later' });
    expect([again.seq, again.fresh, again.sha256]).toEqual([1, false, a.sha256]);
    // a recheck (another check record) and another policy: records 2 and 3
    expect(writeGate(store, RUN, closed([ok('k1', 'r1', 'c1b'), dead])).seq).toBe(2);
    expect(writeGate(store, RUN, closed([ok('k1', 'r1', 'c1b'), dead], { ...POLICY, maxFail: 1 })).seq).toBe(
      3,
    );
    expect(readFileSync(a.file)).toEqual(bytes);
    expect(newestGate(store, RUN)?.seq).toBe(3);
    expect(newestGate(store, { id: 'other' })).toBeUndefined();
  });

  it('takes the next number when another gate wrote this one first', () => {
    const store = tempStore('genjob-gate-');
    writeGate(store, RUN, closed([ok('k1', 'r1', 'c1')]));
    const other = writeGate(store, RUN, closed([ok('k1', 'r2', 'c1')]));
    expect(other.seq).toBe(2);
  });

  it('signs a record as a DSSE envelope over its canonical bytes', () => {
    const store = tempStore('genjob-gate-');
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const record = closed([ok('k1', 'r1', 'c1')]);
    const stored = writeGate(store, RUN, record, { key: privateKey, keyid: 'abcd' });
    expect(stored.signed).toBe(true);
    const env = JSON.parse(readFileSync(stored.file, 'utf8'));
    // the payload type an auditor's DSSE verifier is told (docs/runs.md)
    expect(env.payloadType).toBe('application/vnd.genjob.gate+json');
    const payload = Buffer.from(env.payload, 'base64');
    expect(payload).toEqual(canonicalBytes(record));
    expect(
      verifyPae(GATE_PAYLOAD_TYPE, payload, publicKey, Buffer.from(env.signatures[0].sig, 'base64')),
    ).toBe(true);
    expect(newestGate(store, RUN)).toMatchObject({ seq: 1, signed: true, record: { verdict: 'met' } });
  });

  it.each([
    { name: 'not JSON', bytes: '{', rule: /not a gate record/ },
    {
      name: 'another schema',
      bytes: JSON.stringify({ schema: 'x', keys: [], verdict: 'met' }),
      rule: /schema genjob\/gate@1/,
    },
    {
      name: 'a verdict of its own',
      bytes: JSON.stringify({ schema: 'genjob/gate@1', keys: [], verdict: 'maybe' }),
      rule: /schema/,
    },
    {
      name: 'a key without a pass',
      bytes: JSON.stringify({ schema: 'genjob/gate@1', keys: [{ current: 'k' }], verdict: 'met' }),
      rule: /schema/,
    },
    {
      name: 'another payload type (forged envelope)',
      bytes: JSON.stringify({ payloadType: 'application/vnd.genjob.receipt+json', payload: '' }),
      rule: /payload type/,
    },
    {
      name: 'a payload that is not canonical base64',
      bytes: JSON.stringify({ payloadType: GATE_PAYLOAD_TYPE, payload: 'e30' }),
      rule: /canonical base64/,
    },
    {
      name: 'a payload that is not JSON',
      bytes: JSON.stringify({ payloadType: GATE_PAYLOAD_TYPE, payload: Buffer.from('{').toString('base64') }),
      rule: /not a gate record: .*JSON/, // the parser's own words
    },
    {
      name: 'a key that is not an object',
      bytes: JSON.stringify({ schema: 'genjob/gate@1', keys: [null], verdict: 'met' }),
      rule: /schema/,
    },
    {
      name: 'a key whose current job is not a key',
      bytes: JSON.stringify({ schema: 'genjob/gate@1', keys: [{ current: 5, pass: true }], verdict: 'met' }),
      rule: /schema/,
    },
    ...[
      ['no policy', undefined],
      ['required checks that are not names', { ...POLICY_DOC, require_checks: [1] }],
      ['a min_pass above one', { ...POLICY_DOC, min_pass: { num: 3, den: 2 } }],
      ['a min_pass over zero', { ...POLICY_DOC, min_pass: { num: 0, den: 0 } }],
      ['no min_pass', { ...POLICY_DOC, min_pass: undefined }],
      ['a min_pass that is not a count', { ...POLICY_DOC, min_pass: { num: '1', den: 2 } }],
      ['a max_fail below zero', { ...POLICY_DOC, max_fail: -1 }],
      ['an allow_flaky that is not a boolean', { ...POLICY_DOC, allow_flaky: 'yes' }],
    ].map(([name, policy]) => ({
      name: name as string,
      bytes: JSON.stringify({ schema: 'genjob/gate@1', keys: [], verdict: 'met', policy }),
      rule: /policy: require_checks, min_pass, max_fail and allow_flaky/,
    })),
  ])('refuses a record with $name (EGJ_RUN_INVALID)', ({ bytes, rule }) => {
    const err = thrown(() => parseGateRecord(Buffer.from(bytes), 'f.json')) as GenjobError;
    expect(err.code).toBe('EGJ_RUN_INVALID');
    expect(err.message).toMatch(rule);
  });

  it('reads the newest record by number, not by name order', () => {
    const store = tempStore('genjob-gate-');
    for (let i = 0; i < 10; i++) writeGate(store, RUN, closed([ok('k1', `r${i}`, 'c1')]));
    writeFileSync(join(gatesDir(store, RUN), 'notes.txt'), 'x');
    // names that only contain a record's name are none (a seal, a copy, an editor's backup)
    for (const name of ['99.json.bak', 'x99.json', '99.jsonx', '99.seal'])
      writeFileSync(join(gatesDir(store, RUN), name), '{');
    expect(newestGate(store, RUN)).toMatchObject({ seq: 10, record: { keys: [{ receipt: 'r9' }] } });
  });

  it('reads a record whose policy has no limit on failures and passes nothing at all', () => {
    const doc = {
      schema: 'genjob/gate@1',
      keys: [],
      verdict: 'met',
      policy: { ...POLICY_DOC, max_fail: null },
    };
    expect(parseGateRecord(Buffer.from(JSON.stringify(doc)), 'f.json').record.policy.max_fail).toBeNull();
    const zero = { ...doc, policy: { ...POLICY_DOC, min_pass: { num: 0, den: 1 }, max_fail: 0 } };
    expect(parseGateRecord(Buffer.from(JSON.stringify(zero)), 'f.json').record.policy.min_pass.num).toBe(0);
  });
});

describe('a stored gate record against the decision made again', () => {
  const failing: KeyRecords = {
    ...ok('k2', 'r2', 'c2'),
    checks: [{ checker: 'tests', verdict: 'fail', current: true, recordDigest: 'c2' }],
  };
  const records = [ok('k1', 'r1', 'c1'), failing, dead];
  const decided = closed(records);
  /** The record as a file holds it (parsed back), edited. */
  const stored = (edit: (r: ReturnType<typeof closed>) => void = () => {}) => {
    const r = JSON.parse(JSON.stringify({ ...decided, closed_at: '2000-01-01T00:00:00.000Z' }));
    edit(r);
    return r;
  };

  it('does not stand, and does not throw, where its checks are not objects', () => {
    for (const checks of [[null], null, ['x']])
      expect(
        sameGate(
          stored((r) => Object.assign(r.keys[0]!, { checks })),
          decided,
        ),
      ).toBe(false);
  });

  it('stands when it says exactly what the evidence under its policy decides, whenever it closed', () => {
    expect(decided.keys.map((k) => k.pass)).toEqual([true, false, false]);
    expect(sameGate(stored(), decided)).toBe(true);
  });

  it.each([
    ['a verdict flipped', (r: ReturnType<typeof closed>) => Object.assign(r, { verdict: 'met' })],
    ['a failed key passed', (r: ReturnType<typeof closed>) => Object.assign(r.keys[1]!, { pass: true })],
    ['a key of another job', (r: ReturnType<typeof closed>) => Object.assign(r.keys[0]!, { current: 'kX' })],
    ['a key listed more', (r: ReturnType<typeof closed>) => r.keys.push({ ...r.keys[0]! })],
    ['a key left out', (r: ReturnType<typeof closed>) => r.keys.pop()],
    ['another count', (r: ReturnType<typeof closed>) => Object.assign(r, { passed: 3 })],
    ['another total', (r: ReturnType<typeof closed>) => Object.assign(r, { total: 2 })],
    ['another rate', (r: ReturnType<typeof closed>) => Object.assign(r, { rate: '3/3' })],
    ['another reason for a fail', (r: ReturnType<typeof closed>) => Object.assign(r.keys[1]!, { why: 'x' })],
    [
      'a check record of its own',
      (r: ReturnType<typeof closed>) => Object.assign(r.keys[0]!.checks[0]!, { record: 'cX' }),
    ],
    [
      'an evidence digest of its own',
      (r: ReturnType<typeof closed>) => Object.assign(r, { evidence_sha256: 'e'.repeat(64) }),
    ],
    ['another policy', (r: ReturnType<typeof closed>) => Object.assign(r.policy, { allow_flaky: true })],
    [
      'another manifest',
      (r: ReturnType<typeof closed>) => Object.assign(r, { manifest_sha256: 'n'.repeat(64) }),
    ],
    ['another run', (r: ReturnType<typeof closed>) => Object.assign(r, { run: 'other' })],
    ['another revision', (r: ReturnType<typeof closed>) => Object.assign(r, { revision: 2 })],
    ['another schema', (r: ReturnType<typeof closed>) => Object.assign(r, { schema: 'genjob/gate@2' })],
  ])('does not stand with %s', (_, edit) => {
    expect(sameGate(stored(edit), decided)).toBe(false);
  });

  it('is not taken by writeGate as the decision already written when its claims differ: the next number is', () => {
    const store = tempStore('genjob-gate-');
    const forged = stored((r) => Object.assign(r, { verdict: 'met' }));
    const dir = gatesDir(store, RUN);
    store.fs.mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '7.json'), JSON.stringify(forged));
    const written = writeGate(store, RUN, decided);
    expect(written).toMatchObject({ seq: 8, fresh: true, record: { verdict: 'not-met' } });
    expect(writeGate(store, RUN, decided)).toMatchObject({ seq: 8, fresh: false });
  });

  it('forged: a record name past 2^53 that a branch commits is no record: the gate takes the next real number', () => {
    const store = tempStore('genjob-gate-');
    writeGate(store, RUN, closed([ok('k1', 'r1', 'c1')]));
    const dir = gatesDir(store, RUN);
    const first = readFileSync(join(dir, '1.json'));
    // 10^20 + 1 reads back as 10^20: once taken, that next name would be taken forever (a gate that spins)
    writeFileSync(join(dir, '100000000000000000000.json'), first);
    // 10^20 - 1 reads back as 10^20: a name that is no file (an internal error)
    writeFileSync(join(dir, '99999999999999999999.json'), first);
    expect(newestGate(store, RUN)?.seq).toBe(1);
    expect(writeGate(store, RUN, closed([ok('k1', 'r2', 'c1')]))).toMatchObject({ seq: 2, fresh: true });
    expect(newestGate(store, RUN)?.seq).toBe(2);
  });

  it.each([
    ['junk', (file: string) => writeFileSync(file, 'junk\n')],
    ['a directory', (file: string) => mkdirSync(file)],
  ])(
    'forged: a newest gate record that is %s does not stop the gate: the next number is written',
    (_, make) => {
      const store = tempStore('genjob-gate-');
      writeGate(store, RUN, closed([ok('k1', 'r1', 'c1')]));
      make(join(gatesDir(store, RUN), '7.json'));
      const secret = randomBytes(32);
      const written = writeGate(store, RUN, closed([ok('k1', 'r1', 'c1')]), undefined, secret);
      expect(written).toMatchObject({ seq: 8, fresh: true });
      expect(gateSealed(store, RUN, written, secret)).toBe(true);
    },
  );

  it("forged: a record deciding exactly as the gate does is not sealed as the user's unless the user's gate wrote it", () => {
    const store = tempStore('genjob-gate-');
    const secret = randomBytes(32);
    const own = writeGate(store, RUN, closed([ok('k1', 'r1', 'c1')]), undefined, secret);
    expect(writeGate(store, RUN, closed([ok('k1', 'r1', 'c1')]), undefined, secret)).toMatchObject({
      seq: 1,
      fresh: false,
    });
    // the same decision as a branch commits it: an envelope whose signature no one here can check
    const record = closed([ok('k1', 'r1', 'c1')]);
    const envelope = {
      payload: canonicalBytes(record).toString('base64'),
      payloadType: GATE_PAYLOAD_TYPE,
      signatures: [{ keyid: 'ci', sig: 'AAAA' }],
    };
    writeFileSync(join(gatesDir(store, RUN), '2.json'), JSON.stringify(envelope));
    const written = writeGate(store, RUN, record, undefined, secret);
    expect(written).toMatchObject({ seq: 3, fresh: true, signed: false });
    expect(gateSealed(store, RUN, written, secret)).toBe(true);
    expect(
      gateSealed(
        store,
        RUN,
        {
          seq: 2,
          file: join(gatesDir(store, RUN), '2.json'),
          sha256: sha256Hex(readFileSync(join(gatesDir(store, RUN), '2.json'))),
        },
        secret,
      ),
    ).toBe(false);
    expect(own.seq).toBe(1);
  });

  it('forged: a gates directory a branch commits as a symbolic link is refused; nothing is written where it points', () => {
    const store = tempStore('genjob-gate-');
    const outside = tempDir('genjob-outside-');
    store.fs.mkdirSync(runsDir(store), { recursive: true });
    symlinkSync(outside, gatesDir(store, RUN));
    const err = thrown(() =>
      writeGate(store, RUN, closed([ok('k1', 'r1', 'c1')]), undefined, randomBytes(32)),
    );
    expect([(err as GenjobError).code, (err as GenjobError).message]).toEqual([
      'EGJ_BAD_PATH',
      expect.stringMatching(/r\.gates: a symbolic link; gate writes only inside/),
    ]);
    expect(readdirSync(outside)).toEqual([]);
  });

  it.each([
    ['a lone surrogate', '\ud800'],
    ['markup', '<b>tests</b>'],
  ])(
    'forged: a newest record requiring a check named with %s is refused, and the gate writes its own after it',
    (_, name) => {
      const store = tempStore('genjob-gate-');
      const record = closed([ok('k1', 'r1', 'c1')]);
      const forged = { ...record, policy: { ...record.policy, require_checks: [name] } };
      const dir = gatesDir(store, RUN);
      store.fs.mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, '4.json'), JSON.stringify(forged));
      const err = thrown(() => newestGate(store, RUN)) as GenjobError;
      expect([err.code, err.message]).toEqual([
        'EGJ_RUN_INVALID',
        expect.stringMatching(/policy: require_checks/),
      ]);
      expect(writeGate(store, RUN, record, undefined, randomBytes(32))).toMatchObject({
        seq: 5,
        fresh: true,
      });
    },
  );
});
