// commitResult: the epoch is re-checked under the key lock; a superseded attempt commits nothing and its
// receipt is dead-lettered raw; a receipt of an older epoch already in receipts/ is moved to dead/, not clobbered.
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { claim } from '../../src/store/claim.js';
import { mintJob } from '../../src/store/mint-job.js';
import { reapStale } from '../../src/store/reap.js';
import { commitResult } from '../../src/worker/commit-result.js';
import { tempStore } from '../helpers/temp-store.js';

const W = { id: 'w', host: 'h', pid: 1 };

function setup() {
  const store = tempStore('genjob-commit-');
  const { key } = mintJob(store, buildJob('make x', [{ path: 'x.txt', sha256: null }]));
  let n = 0;
  const stage = (bytes: string) => {
    n += 1;
    const dir = join(store.layout.staging, `.extract-${n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'x.txt'), bytes);
    return dir;
  };
  const receipt = (epoch: number) => Buffer.from(`${JSON.stringify({ key, epoch })}\n`);
  return { store, key, stage, receipt };
}

describe('commitResult', () => {
  it('commits the newest epoch: out/, then the receipt, then running → received, lease removed', async () => {
    const { store, key, stage, receipt } = setup();
    claim(store, key, 'w');
    beginAttempt(store, key, W, 60, 'local');
    expect(await commitResult(store, key, 1, receipt(1), stage('one'))).toEqual({ committed: true });
    expect(readFileSync(join(store.layout.outDir(key), 'x.txt'), 'utf8')).toBe('one');
    expect(readFileSync(store.layout.receipt(key))).toEqual(receipt(1));
    expect(readdirSync(store.layout.dir('received'))).toEqual([`${key}.json`]);
    expect(readdirSync(store.layout.dir('leases'))).toEqual([]);
    expect(readdirSync(store.layout.staging)).toEqual([]);
  });

  it('refuses a superseded epoch: nothing committed, its receipt kept raw in dead/ as EGJ_EPOCH_SUPERSEDED', async () => {
    const { store, key, stage, receipt } = setup();
    claim(store, key, 'w');
    beginAttempt(store, key, W, 30, 'local');
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(store.layout.lease(key), past, past);
    expect(await reapStale(store, 30)).toHaveLength(1);
    claim(store, key, 'w2');
    beginAttempt(store, key, W, 30, 'local');
    const late = await commitResult(store, key, 1, receipt(1), stage('late'));
    expect(late.committed).toBe(false);
    expect(readdirSync(store.layout.dir('receipts'))).toEqual([]);
    expect(readdirSync(store.layout.dir('out'))).toEqual([]);
    const dead = readdirSync(store.layout.dir('dead'));
    const raw = dead.find((n) => n.startsWith(`${key}.receipt.e1.`) && !n.endsWith('.why.json'))!;
    expect(readFileSync(join(store.layout.dir('dead'), raw))).toEqual(receipt(1));
    expect(JSON.parse(readFileSync(join(store.layout.dir('dead'), `${raw}.why.json`), 'utf8')).code).toBe(
      'EGJ_EPOCH_SUPERSEDED',
    );
    // the current epoch still commits
    expect(await commitResult(store, key, 2, receipt(2), stage('two'))).toEqual({ committed: true });
    expect(readFileSync(join(store.layout.outDir(key), 'x.txt'), 'utf8')).toBe('two');
  });

  it('moves an older epoch receipt left in receipts/ to dead/ instead of clobbering it', async () => {
    const { store, key, stage, receipt } = setup();
    claim(store, key, 'w');
    beginAttempt(store, key, W, 60, 'local');
    beginAttempt(store, key, W, 60, 'local'); // epoch 2 took over while epoch 1's receipt had landed
    writeFileSync(store.layout.receipt(key), receipt(1));
    expect(await commitResult(store, key, 2, receipt(2), stage('two'))).toEqual({ committed: true });
    expect(readFileSync(store.layout.receipt(key))).toEqual(receipt(2));
    const dead = readdirSync(store.layout.dir('dead')).filter((n) => !n.endsWith('.why.json'));
    expect(dead).toHaveLength(1);
    expect(readFileSync(join(store.layout.dir('dead'), dead[0]!))).toEqual(receipt(1));
  });

  it('leaves a standing receipt of the same epoch and its outputs alone, keeping the other one in dead/', async () => {
    const { store, key, stage, receipt } = setup();
    claim(store, key, 'w');
    beginAttempt(store, key, W, 60, 'local');
    // a stolen lock let another delivery of epoch 1 commit first, with other bytes
    mkdirSync(store.layout.outDir(key));
    writeFileSync(join(store.layout.outDir(key), 'x.txt'), 'first');
    writeFileSync(
      store.layout.receipt(key),
      Buffer.from(`${JSON.stringify({ key, epoch: 1, other: true })}\n`),
    );
    const second = await commitResult(store, key, 1, receipt(1), stage('second'));
    expect(second.committed).toBe(false);
    expect(readFileSync(join(store.layout.outDir(key), 'x.txt'), 'utf8')).toBe('first');
    const dead = readdirSync(store.layout.dir('dead'));
    const raw = dead.find((n) => n.startsWith(`${key}.receipt.e1.`) && !n.endsWith('.why.json'))!;
    expect(readFileSync(join(store.layout.dir('dead'), raw))).toEqual(receipt(1));
    expect(JSON.parse(readFileSync(join(store.layout.dir('dead'), `${raw}.why.json`), 'utf8')).code).toBe(
      'EGJ_DUPLICATE_RECEIPT',
    );
    expect(readdirSync(store.layout.staging)).toEqual([]);
  });
});
