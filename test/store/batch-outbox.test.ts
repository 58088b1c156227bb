import { existsSync, utimesSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { attemptsSinceMint, beginAttempt, markUnspent, type Worker } from '../../src/store/attempts.js';
import {
  type BatchRecord,
  batchHeldKeys,
  openRecords,
  readRecord,
  recordIntent,
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
