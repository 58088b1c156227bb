// A report's run as the run plane reads it, over runs sealed by its own code and gate records closed by
// `genjob gate`'s command: NAME is the newest revision, keys are followed past a remint, the newest gate
// record is shown as it was closed (verdict, rate, policy, file, digest, signed) and is stale exactly
// when `apply --gated` would call it stale (a receipt, a check record, HEAD or the manifest moved after
// closing). Names, missing runs and forged records fail with the run plane's own codes.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkReader } from '../../src/commands/gate.js';
import { userSecret } from '../../src/remote/cache-mac.js';
import { readRun } from '../../src/report/run-source.js';
import { gatesDir } from '../../src/run/gate-record.js';
import type { Store } from '../../src/store/store.js';
import { checkRecords } from '../helpers/check-record.js';
import { commitAll } from '../helpers/commit-all.js';
import { fixtureRepo, patchReceipt } from './fixture.js';
import { closeGate, remint, sealRun } from './run-files.js';

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

const read = async (store: Store, typed: string) => readRun(store, typed, checkReader, await userSecret());

describe('readRun', () => {
  it('takes NAME as its newest revision and NAME@N as that one, each key followed past a remint', async () => {
    const { store, keys } = await world();
    await sealRun(store, 'hints', [keys[0]!]);
    await sealRun(store, 'hints@2', [keys[0]!, keys[1]!, keys[2]!]);
    await remint(store, keys[1]!, keys[4]!);
    expect(await read(store, 'hints')).toEqual({
      name: 'hints@2',
      keys: [keys[0], keys[4], keys[2]],
      sealed: true,
      gate: null,
    });
    expect(await read(store, 'hints@1')).toEqual({
      name: 'hints',
      keys: [keys[0]],
      sealed: true,
      gate: null,
    });
    // a manifest the user's mint did not seal (its seal gone, or another user's secret) shows as not theirs
    rmSync(join(store.layout.dir('runs'), 'hints.seal'));
    expect(await read(store, 'hints@1')).toMatchObject({ name: 'hints', sealed: false });
    expect(await readRun(store, 'hints@2', checkReader, null)).toMatchObject({ sealed: false });
    for (const missing of ['hints@3', 'other'])
      await expect(read(store, missing)).rejects.toMatchObject({
        code: 'EGJ_UNKNOWN_RUN',
        exitCode: 2,
        message: expect.stringContaining(`no run "${missing}"`),
      });
    await expect(read(store, '../hints')).rejects.toMatchObject({
      code: 'EGJ_BAD_RUN_NAME',
      message: /a run name is/,
    });
  });

  it('shows the newest gate record as closed (verdict, rate, policy, file, digest, signed), then stale once a check record moves', async () => {
    const { root, store, keys, record } = await world();
    const run = keys.slice(0, 3);
    await sealRun(store, 'hints', run);
    record(keys[2]!, 'tests', [{ outcome: 'fail' }]);
    const first = await closeGate(root, 'hints');
    expect((await read(store, 'hints')).gate).toEqual({
      met: false,
      passed: 2,
      total: 3,
      rate: '2/3 = 66.6%',
      policy: 'min 95.0%, checks tests',
      file: join('.gen', 'runs', 'hints.gates', '1.json'),
      recordDigest: first.sha256,
      signed: false,
      stale: false,
      sealed: true,
    });
    // without its seal (or under another user's secret) it is not the user's decision
    const seal = join(store.layout.dir('runs'), 'hints.gates', '1.seal');
    const sealBytes = readFileSync(seal);
    rmSync(seal);
    expect((await read(store, 'hints')).gate).toMatchObject({ sealed: false, stale: false });
    expect((await readRun(store, 'hints', checkReader, randomBytes(32))).gate).toMatchObject({
      sealed: false,
    });
    expect((await readRun(store, 'hints', checkReader, null)).gate).toMatchObject({ sealed: false });
    writeFileSync(seal, sealBytes);
    // the tests pass now, and the gate closes again, signed: the newest record speaks
    record(keys[2]!, 'tests', [{ outcome: 'pass' }]);
    const key = join(root, '..', 'gate.key');
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(key, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    const second = await closeGate(root, 'hints', { signKey: key });
    expect(second.seq).toBe(2);
    expect((await read(store, 'hints')).gate).toMatchObject({
      met: true,
      rate: '3/3 = 100.0%',
      file: join('.gen', 'runs', 'hints.gates', '2.json'),
      recordDigest: second.sha256,
      signed: true,
      stale: false,
    });
    // a check record made after closing: the record no longer names what speaks for that job
    record(keys[1]!, 'tests', [{ outcome: 'fail' }]);
    expect((await read(store, 'hints')).gate).toMatchObject({ met: true, stale: true });
  });

  it("forged: an envelope a branch adds after the user's record, any bytes for its signature, is not shown as signed", async () => {
    const { root, store, keys } = await world();
    await sealRun(store, 'hints', keys.slice(0, 2));
    const first = await closeGate(root, 'hints');
    const envelope = {
      payload: readFileSync(join(gatesDir(store, { id: 'hints' }), `${first.seq}.json`)).toString('base64'),
      payloadType: 'application/vnd.genjob.gate+json',
      signatures: [{ keyid: 'ci', sig: 'AAAA' }],
    };
    writeFileSync(join(gatesDir(store, { id: 'hints' }), '2.json'), JSON.stringify(envelope));
    expect((await read(store, 'hints')).gate).toMatchObject({ sealed: false, signed: false, stale: false });
  });

  it('a receipt replaced after closing makes the record stale; a job outside the run does not', async () => {
    const { root, store, keys } = await world();
    await sealRun(store, 'hints', keys.slice(0, 2));
    await closeGate(root, 'hints');
    patchReceipt(store, keys[3]!, { reason: 'another answer' });
    expect((await read(store, 'hints')).gate).toMatchObject({ met: true, stale: false });
    patchReceipt(store, keys[0]!, { reason: 'another answer' });
    expect((await read(store, 'hints')).gate).toMatchObject({ stale: true });
  });

  it('HEAD moving after closing (every check record goes stale) makes the record stale; so does a tampered manifest', async () => {
    const { root, store, keys } = await world();
    await sealRun(store, 'hints', keys.slice(0, 2));
    await sealRun(store, 'other', keys.slice(0, 2));
    await closeGate(root, 'hints');
    await closeGate(root, 'other');
    expect((await read(store, 'hints')).gate).toMatchObject({ stale: false });
    const manifest = join(store.layout.dir('runs'), 'other.json');
    const sealed = readFileSync(manifest, 'utf8');
    writeFileSync(
      manifest,
      sealed.replace(/"created_at": "[^"]*"/, '"created_at": "2000-01-01T00:00:00.000Z"'),
    );
    expect((await read(store, 'other')).gate).toMatchObject({ stale: true });
    expect((await read(store, 'hints')).gate).toMatchObject({ stale: false });
    writeFileSync(join(root, 'NEWS'), 'a commit after the gate closed\n');
    await commitAll(root);
    expect((await read(store, 'hints')).gate).toMatchObject({ stale: true });
  });

  it('a forged gate record (another payload type, another schema, no JSON) fails naming its file', async () => {
    const { store, keys } = await world();
    await sealRun(store, 'hints', keys.slice(0, 1));
    const bad = [
      JSON.stringify({ payloadType: 'application/vnd.in-toto+json', payload: '', signatures: [] }),
      JSON.stringify({ schema: 'genjob/gate@9', keys: [] }),
      '<script>genjobPwned(1)</script>',
    ];
    const dir = gatesDir(store, { id: 'hints' });
    for (const [i, text] of bad.entries()) {
      store.fs.mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${i + 1}.json`), text);
      await expect(read(store, 'hints')).rejects.toMatchObject({
        code: 'EGJ_RUN_INVALID',
        message: expect.stringContaining(join('hints.gates', `${i + 1}.json`)),
      });
    }
  });
});
