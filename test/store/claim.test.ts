// The batch claimer: one listing of the queue per batch, a fresh listing when a claim fails or the
// batch is used up, declined keys left queued — one temp .gen/ per test.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { Claimer, claim } from '../../src/store/claim.js';
import { mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { tempStore } from '../helpers/temp-store.js';

function mintMany(store: Store, n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => {
    const job = buildJob(`job ${from + i}`, [{ path: `f${from + i}.txt`, sha256: sha256Hex(`${from + i}`) }]);
    mintJob(store, job);
    return job.key;
  });
}

function drain(c: Claimer, accept?: (k: string) => boolean): string[] {
  const got: string[] = [];
  for (let k = c.next(accept); k !== undefined; k = c.next(accept)) got.push(k);
  return got;
}

describe('Claimer', () => {
  it('claims 60 queued jobs with one listing of the queue, plus one to see it empty', () => {
    const store = tempStore('genjob-claimer-');
    const keys = mintMany(store, 60);
    const c = new Claimer(store, 'w');
    expect(new Set(drain(c))).toEqual(new Set(keys));
    expect(c.listings).toBe(2);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([]);
  });

  it('lists again when a claim fails because another worker took the key first', () => {
    const store = tempStore('genjob-claimer-');
    const keys = mintMany(store, 20);
    const a = new Claimer(store, 'a');
    const b = new Claimer(store, 'b');
    const got: string[] = [];
    // b takes half the jobs behind a's back after a has listed the queue
    got.push(a.next()!);
    for (const k of keys) if (got.length < 11 && !got.includes(k) && claim(store, k, 'b')) got.push(k);
    got.push(...drain(a), ...drain(b));
    expect(got.sort()).toEqual([...keys].sort()); // every job claimed exactly once
    expect(a.listings).toBeGreaterThan(1);
  });

  it('finds a job queued after its batch was listed once the batch is used up', () => {
    const store = tempStore('genjob-claimer-');
    const first = mintMany(store, 3);
    const c = new Claimer(store, 'w');
    const got = [c.next()!];
    const late = mintMany(store, 1, 100);
    got.push(...drain(c));
    expect(new Set(got)).toEqual(new Set([...first, ...late]));
  });

  it('leaves declined keys queued and claims them once they are accepted', () => {
    const store = tempStore('genjob-claimer-');
    const keys = mintMany(store, 5);
    const held = keys[2]!;
    const c = new Claimer(store, 'w');
    const got = drain(c, (k) => k !== held);
    expect(new Set(got)).toEqual(new Set(keys.filter((k) => k !== held)));
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${held}.json`]);
    expect(c.next()).toBe(held);
  });
});
