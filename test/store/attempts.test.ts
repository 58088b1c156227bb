// Attempts and epochs at their edges: which names under attempts/<key>/ are epochs, and in what order; what
// an attempt and its lease hold on disk; an epoch another worker recorded first is skipped, never reused;
// counting attempts since the last mint (minted-after, unspent marks, a garbled minted-after) — one temp
// .gen/ per test.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import {
  attemptsSinceMint,
  beginAttempt,
  currentEpoch,
  epochsOf,
  markMinted,
  markUnspent,
  readAttempt,
  type Worker,
} from '../../src/store/attempts.js';
import { readLease } from '../../src/store/lease.js';
import type { Store } from '../../src/store/store.js';
import { hookedStore } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';

const W: Worker = { id: 'w1', host: 'h', pid: 7, start: 99 };

function fresh(): { store: Store; key: string } {
  const store = tempStore('genjob-attempts-');
  return { store, key: buildJob('attempt job', [{ path: 'a.txt', sha256: sha256Hex('a') }]).key };
}

describe('epochs', () => {
  it('reads only <n>.json names as epochs, in numeric order', () => {
    const { store, key } = fresh();
    const dir = store.layout.attemptsDir(key);
    beginAttempt(store, key, W, 60, 'local');
    for (const name of [
      '10.json',
      '2.json',
      '3.unspent',
      'minted-after',
      'a4.json',
      '5.json.bak',
      '6.jsonl',
      '.json',
    ])
      writeFileSync(join(dir, name), '');
    expect(epochsOf(store, key)).toEqual([1, 2, 10]);
    expect(currentEpoch(store, key)).toBe(10);
  });

  it('knows no epochs of a key never attempted', () => {
    const { store, key } = fresh();
    expect(epochsOf(store, key)).toEqual([]);
    expect(currentEpoch(store, key)).toBe(0);
    expect(readAttempt(store, key, 1)).toBeUndefined();
  });
});

describe('beginAttempt', () => {
  it('writes the attempt record and the same bytes as the lease: one JSON line with who, when, where', () => {
    const { store, key } = fresh();
    const before = Date.now();
    const rec = beginAttempt(store, key, W, 45, 'host:gpu1');
    expect(rec).toEqual({
      key,
      epoch: 1,
      worker: W,
      ttl_s: 45,
      claimed_at: rec.claimed_at,
      destination: 'host:gpu1',
    });
    const claimedAt = Date.parse(rec.claimed_at);
    expect(claimedAt).toBeGreaterThanOrEqual(before - 1);
    expect(claimedAt).toBeLessThanOrEqual(Date.now());
    expect(rec.claimed_at).toBe(new Date(claimedAt).toISOString());
    const attempt = readFileSync(store.layout.attempt(key, 1), 'utf8');
    expect(attempt).toBe(`${JSON.stringify(rec)}\n`);
    expect(readFileSync(store.layout.lease(key), 'utf8')).toBe(attempt);
    expect(readAttempt(store, key, 1)).toEqual(rec);
    expect(readLease(store, key)).toEqual(rec);
  });

  it('makes the lease the attempt record under a second name: one temp written, three fsyncs, not two temps and four', () => {
    const { store, key } = fresh();
    beginAttempt(store, key, W, 60, 'local');
    const calls: string[] = [];
    const counted = hookedStore(store, (call, args, proceed) => {
      if (call === 'fsyncSync' || call === 'openSync') calls.push(`${call} ${String(args[0])}`);
      return proceed();
    });
    const rec = beginAttempt(counted, key, W, 60, 'local');
    expect(calls.filter((c) => c.startsWith('fsyncSync'))).toHaveLength(3);
    expect(calls.filter((c) => c.startsWith('openSync') && c.includes('/.tmp-'))).toHaveLength(1);
    expect(statSync(store.layout.lease(key)).ino).toBe(statSync(store.layout.attempt(key, 2)).ino);
    expect(readLease(store, key)).toEqual(rec);
    expect(readAttempt(store, key, 1)?.epoch).toBe(1); // the earlier record keeps its own bytes
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('skips an epoch another worker recorded first, leaving its record alone, and takes the next one', () => {
    const { store, key } = fresh();
    beginAttempt(store, key, W, 60, 'local');
    const theirs = '{"theirs":true}\n';
    const second = store.layout.attempt(key, 2);
    const raced = hookedStore(store, (call, args, proceed) => {
      if (call === 'linkSync' && args[1] === second && !existsSync(second)) writeFileSync(second, theirs);
      return proceed();
    });
    const rec = beginAttempt(raced, key, W, 60, 'local');
    expect(rec.epoch).toBe(3);
    expect(epochsOf(store, key)).toEqual([1, 2, 3]);
    expect(readFileSync(second, 'utf8')).toBe(theirs);
    expect(readLease(store, key)?.epoch).toBe(3);
    expect(readAttempt(store, key, 3)).toEqual(rec);
  });
});

describe('attemptsSinceMint', () => {
  it('counts only the epochs after minted-after, which markMinted sets to the newest epoch', () => {
    const { store, key } = fresh();
    for (let i = 0; i < 2; i++) beginAttempt(store, key, W, 60, 'local');
    expect(attemptsSinceMint(store, key)).toBe(2);
    markMinted(store, key);
    expect(readFileSync(join(store.layout.attemptsDir(key), 'minted-after'), 'utf8')).toBe('2');
    expect(attemptsSinceMint(store, key)).toBe(0);
    beginAttempt(store, key, W, 60, 'local');
    expect(attemptsSinceMint(store, key)).toBe(1);
  });

  it('marks nothing for a key never attempted', () => {
    const { store, key } = fresh();
    markMinted(store, key);
    expect(existsSync(store.layout.attemptsDir(key))).toBe(false);
    expect(attemptsSinceMint(store, key)).toBe(0);
  });

  it('counts every epoch when minted-after is garbled', () => {
    const { store, key } = fresh();
    for (let i = 0; i < 3; i++) beginAttempt(store, key, W, 60, 'local');
    for (const garbled of ['two', '1.5', '-', '99999999999999999999']) {
      writeFileSync(join(store.layout.attemptsDir(key), 'minted-after'), garbled);
      expect(attemptsSinceMint(store, key), garbled).toBe(3);
    }
  });

  it('does not count an epoch marked unspent, which leaves an empty <epoch>.unspent beside it', () => {
    const { store, key } = fresh();
    for (let i = 0; i < 3; i++) beginAttempt(store, key, W, 60, 'local');
    markUnspent(store, key, 2);
    const dir = store.layout.attemptsDir(key);
    expect(readdirSync(dir).sort()).toEqual(['1.json', '2.json', '2.unspent', '3.json']);
    expect(readFileSync(join(dir, '2.unspent'))).toEqual(Buffer.alloc(0));
    expect(attemptsSinceMint(store, key)).toBe(2);
    expect(epochsOf(store, key)).toEqual([1, 2, 3]); // still an epoch: never reused
  });
});
