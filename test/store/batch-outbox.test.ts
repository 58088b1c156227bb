import { randomBytes } from 'node:crypto';
import { existsSync, utimesSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { attemptsSinceMint, beginAttempt, markUnspent, type Worker } from '../../src/store/attempts.js';
import {
  type BatchRecord,
  batchHeldKeys,
  intentHolds,
  openRecords,
  readRecord,
  recordIntent,
  recordPath,
  sealIntent,
  updateRecord,
} from '../../src/store/batch-outbox.js';
import { claim } from '../../src/store/claim.js';
import { mintJob } from '../../src/store/mint-job.js';
import { reapStale } from '../../src/store/reap.js';
import { tempStore } from '../helpers/temp-store.js';

const W: Worker = { id: 'w', host: 'h', pid: 1 };

function setup(n: number) {
  const store = tempStore('genjob-outbox-');
  const keys = Array.from(
    { length: n },
    (_, i) => mintJob(store, buildJob(`job ${i}`, [{ path: `f${i}`, sha256: null }])).key,
  );
  for (const k of keys) {
    claim(store, k, 'w');
    beginAttempt(store, k, W, 30, 'batch r1');
  }
  return { store, keys };
}

const record = (keys: string[]): BatchRecord => ({
  run: 'r1',
  state: 'intent',
  created_at: '2026-12-01T00:00:00Z',
  jobs: keys.map((key) => ({ key, epoch: 1, job_digest: '0'.repeat(64), format: 'structured' })),
  file_id: null,
  batch_id: null,
  provider_status: null,
});

const old = (path: string) => {
  const t = new Date(Date.now() - 3600_000);
  utimesSync(path, t, t);
};

describe('the batch outbox', () => {
  it('records the intent once, moves it forward, and holds its keys until done', () => {
    const { store, keys } = setup(2);
    recordIntent(store, record(keys), Buffer.from('{}\n'));
    expect(() => recordIntent(store, record(keys), Buffer.from('{}\n'))).toThrow(/already has a record/);
    updateRecord(store, { ...record(keys), state: 'submitted', file_id: 'f', batch_id: 'b' });
    expect(readRecord(store, 'r1')).toMatchObject({ state: 'submitted', batch_id: 'b' });
    expect([...batchHeldKeys(store).entries()]).toEqual(keys.map((k) => [k, 1]));
    updateRecord(store, { ...record(keys), state: 'done' });
    expect(openRecords(store)).toEqual([]);
    expect(batchHeldKeys(store).size).toBe(0);
  });

  it('keeps the reaper off jobs an open batch holds, however old their lease, and not off the others', async () => {
    const { store, keys } = setup(2);
    const [held, free] = keys as [string, string];
    recordIntent(store, record([held]), Buffer.from('{}\n'));
    for (const k of keys) old(store.layout.lease(k));
    const reaped = await reapStale(store, 30);
    expect(reaped.map((r) => r.key)).toEqual([free]);
    expect(existsSync(store.layout.jobFile('running', held))).toBe(true);
  });

  it('does not count an attempt marked unspent against --max-attempts', () => {
    const { store, keys } = setup(1);
    const key = keys[0]!;
    expect(attemptsSinceMint(store, key)).toBe(1);
    markUnspent(store, key, 1);
    expect(attemptsSinceMint(store, key)).toBe(0);
  });
});

describe('what the outbox takes from a record (a branch can commit .gen/batches/)', () => {
  it('reads only a record of the shape genjob writes: keys are keys and epochs numbers, never paths', () => {
    const { store, keys } = setup(1);
    const good = record(keys);
    recordIntent(store, good, Buffer.from('{}\n'));
    expect(readRecord(store, 'r1')).toEqual(good);
    const job = good.jobs[0]!;
    for (const bad of [
      { ...good, run: 'r2' },
      { ...good, state: 'sent' },
      { ...good, created_at: 5 },
      { ...good, jobs: 'all' },
      { ...good, jobs: [null] },
      { ...good, jobs: [{ ...job, key: '../..' }] },
      { ...good, jobs: [job, { ...job, key: '../..' }] }, // every job, not some
      { ...good, jobs: [{ ...job, key: 'A'.repeat(64) }] },
      { ...good, jobs: [{ ...job, epoch: '../../x' }] },
      { ...good, jobs: [{ ...job, epoch: 0 }] },
      { ...good, jobs: [{ ...job, epoch: 1.5 }] },
      { ...good, jobs: [{ ...job, job_digest: 7 }] },
      { ...good, jobs: [{ ...job, format: 'xml' }] },
      { ...good, file_id: 3 },
      { ...good, batch_id: {} },
      { ...good, provider_status: [] },
      { ...good, intent_seal: 1 },
      null,
    ]) {
      writeFileSync(recordPath(store, 'r1'), JSON.stringify(bad));
      expect(readRecord(store, 'r1'), JSON.stringify(bad)).toBeUndefined();
    }
    updateRecord(store, { ...good, intent_seal: 'x' });
    expect(readRecord(store, 'r1')).toMatchObject({ intent_seal: 'x' });
    // torn: no record, and the listings go past it
    writeFileSync(recordPath(store, 'r1'), '{"run":"r1","sta');
    expect(readRecord(store, 'r1')).toBeUndefined();
    expect(openRecords(store)).toEqual([]);
  });

  it("holds an intent only under the user's seal over exactly its run, jobs and input bytes", () => {
    const { keys } = setup(2);
    const secret = randomBytes(32);
    const jsonl = Buffer.from('{"custom_id":"k"}\n');
    const rec = { ...record(keys), intent_seal: sealIntent(secret, 'r1', record(keys).jobs, jsonl) };
    expect(intentHolds(secret, rec, jsonl)).toBe(true);
    expect(intentHolds(secret, rec, Buffer.from('{"custom_id":"k"}\n{"more":1}\n'))).toBe(false);
    expect(intentHolds(secret, { ...rec, run: 'r2' }, jsonl)).toBe(false);
    expect(intentHolds(secret, { ...rec, jobs: rec.jobs.slice(1) }, jsonl)).toBe(false);
    expect(intentHolds(secret, { ...rec, jobs: [{ ...rec.jobs[0]!, epoch: 2 }, rec.jobs[1]!] }, jsonl)).toBe(
      false,
    );
    expect(intentHolds(randomBytes(32), rec, jsonl)).toBe(false);
    expect(intentHolds(null, rec, jsonl)).toBe(false);
    const { intent_seal: _, ...unsealed } = rec;
    expect(intentHolds(secret, unsealed, jsonl)).toBe(false);
  });
});
