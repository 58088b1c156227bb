// A report's run, read from the run plane's files written here exactly as docs/runs.md shows them: the
// sealed manifest (NAME is its newest revision), keys followed past a remint to their successor, and the
// newest gate record (canonical JSON, or a DSSE envelope over it) shown as closed, with its file's digest,
// and stale once a key's receipt or check record is no longer the one it names. A forged or broken
// record fails the report naming its file.
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { signEnvelope } from '../../src/core/dsse.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { readRun } from '../../src/report/run-source.js';
import { deadLetterFile } from '../../src/store/dead-letter.js';
import { checkRecords } from '../helpers/check-record.js';
import { commitAll } from '../helpers/commit-all.js';
import { fixtureRepo, patchReceipt } from './fixture.js';
import { gateRecord, sealRun, writeGate } from './run-files.js';

async function world() {
  const repo = fixtureRepo(5);
  writeFileSync(
    join(repo.root, 'genjob.config.json'),
    JSON.stringify({ checkers: { tests: { run: 'true' } } }),
  );
  const record = await checkRecords(repo.root, repo.store, await commitAll(repo.root));
  const keys = repo.jobs.map((j) => j.key);
  for (const k of keys) record(k, 'tests', [{ outcome: 'pass' }]);
  return { ...repo, keys, record };
}

describe('readRun', () => {
  it('takes NAME as its newest revision and NAME@N as that one, each key followed past a remint', async () => {
    const { root, store, keys } = await world();
    sealRun(store, 'hints', [keys[0]!]);
    sealRun(store, 'hints@2', [keys[0]!, keys[1]!, keys[2]!]);
    // key 1 reminted: its job file in dead/ as superseded by key 4 (as `genjob remint` leaves it)
    deadLetterFile(store, store.layout.jobFile('received', keys[1]!), `${keys[1]}.job`, {
      key: keys[1]!,
      code: 'EGJ_SUPERSEDED',
      reason: `superseded by ${keys[4]}`,
      superseded_by: keys[4]!,
    });
    expect(await readRun(root, 'hints')).toEqual({
      name: 'hints@2',
      keys: [keys[0], keys[4], keys[2]],
      gate: null,
    });
    expect(await readRun(root, 'hints@1')).toEqual({ name: 'hints', keys: [keys[0]], gate: null });
    await expect(readRun(root, 'hints@3')).rejects.toMatchObject({
      code: 'EGJ_USAGE',
      message: /no run of that name/,
    });
    await expect(readRun(root, 'other')).rejects.toMatchObject({ code: 'EGJ_USAGE' });
    await expect(readRun(root, '../hints')).rejects.toMatchObject({
      code: 'EGJ_USAGE',
      message: /a run name is/,
    });
  });

  it('shows the newest gate record as closed (verdict, rate, policy, its digest), then stale once a receipt or check record moves', async () => {
    const { root, store, keys, record } = await world();
    const run = keys.slice(0, 3);
    sealRun(store, 'hints', run);
    const doc = await gateRecord(root, store, 'hints', run, [keys[2]!]);
    writeGate(store, 'hints', 1, canonicalBytes(doc));
    const first = await readRun(root, 'hints');
    expect(first.gate).toEqual({
      state: 'closed',
      met: false,
      passed: 2,
      total: 3,
      rate: '2/3 = 66.6%',
      policy: '--min-pass 95% --require-check tests',
      recordDigest: sha256Hex(canonicalBytes(doc)),
      stale: false,
      waiting: null,
    });
    // a second record, signed: the newest one speaks, and its digest is the envelope file's
    const { privateKey } = generateKeyPairSync('ed25519');
    const signed = canonicalBytes(
      signEnvelope(
        'application/vnd.genjob.gate+json',
        canonicalBytes({ ...doc, verdict: 'met', passed: 3, rate: '3/3 = 100.0%' }),
        privateKey,
        'k',
      ),
    );
    writeGate(store, 'hints', 2, signed);
    expect((await readRun(root, 'hints')).gate).toMatchObject({
      met: true,
      rate: '3/3 = 100.0%',
      recordDigest: sha256Hex(signed),
      stale: false,
    });
    // a check record made after closing: the record no longer names what speaks for that job
    record(keys[1]!, 'tests', [{ outcome: 'fail' }]);
    expect((await readRun(root, 'hints')).gate).toMatchObject({ stale: true });
  });

  it('a receipt replaced after closing makes the record stale; a job outside the run does not', async () => {
    const { root, store, keys } = await world();
    sealRun(store, 'hints', keys.slice(0, 2));
    writeGate(store, 'hints', 1, canonicalBytes(await gateRecord(root, store, 'hints', keys.slice(0, 2))));
    patchReceipt(store, keys[3]!, { reason: 'another answer' });
    expect((await readRun(root, 'hints')).gate).toMatchObject({ met: true, stale: false });
    patchReceipt(store, keys[0]!, { reason: 'another answer' });
    expect((await readRun(root, 'hints')).gate).toMatchObject({ stale: true });
  });

  it('HEAD moving after closing (every check record goes stale) makes the record stale; so does another manifest', async () => {
    const { root, store, keys } = await world();
    sealRun(store, 'hints', keys.slice(0, 2));
    writeGate(store, 'hints', 1, canonicalBytes(await gateRecord(root, store, 'hints', keys.slice(0, 2))));
    expect((await readRun(root, 'hints')).gate).toMatchObject({ stale: false });
    writeFileSync(join(root, 'NEWS'), 'a commit after the gate closed\n');
    await commitAll(root);
    expect((await readRun(root, 'hints')).gate).toMatchObject({ stale: true });

    sealRun(store, 'other', keys.slice(0, 2));
    const doc = await gateRecord(root, store, 'other', keys.slice(0, 2));
    writeGate(store, 'other', 1, canonicalBytes({ ...doc, manifest_sha256: 'f'.repeat(64) }));
    expect((await readRun(root, 'other')).gate).toMatchObject({ stale: true });
  });

  it('a forged gate record (another payload type, another schema, no JSON) fails naming its file', async () => {
    const { root, store, keys } = await world();
    sealRun(store, 'hints', keys.slice(0, 1));
    const bad = [
      Buffer.from(
        JSON.stringify({ payloadType: 'application/vnd.in-toto+json', payload: '', signatures: [] }),
      ),
      canonicalBytes({ schema: 'genjob/gate@9', keys: [] }),
      Buffer.from('<script>genjobPwned(1)</script>'),
    ];
    for (const [i, bytes] of bad.entries()) {
      writeGate(store, 'hints', i + 1, bytes);
      await expect(readRun(root, 'hints')).rejects.toMatchObject({
        code: 'EGJ_USAGE',
        message: expect.stringContaining(join('hints.gates', `${i + 1}.json`)),
      });
    }
  });
});
