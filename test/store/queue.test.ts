// Claim, attempts and epochs, lease beats and age, reaping, dead letters — one temp .gen/ per test.
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob, type Job } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { beginAttempt, currentEpoch, epochsOf, readAttempt, type Worker } from '../../src/store/attempts.js';
import { claim, claimNext } from '../../src/store/claim.js';
import { deadLetterBytes, deadLetterFile } from '../../src/store/dead-letter.js';
import { nodeFs } from '../../src/store/fs-port.js';
import { readJournal } from '../../src/store/journal.js';
import { beat, leaseAgeMs, readLease } from '../../src/store/lease.js';
import { mintJob } from '../../src/store/mint-job.js';
import { reapStale } from '../../src/store/reap.js';
import { Store } from '../../src/store/store.js';
import { crashingFs, isCrash } from '../helpers/crashing-fs.js';
import { tempDir, tempStore } from '../helpers/temp-store.js';

const W: Worker = { id: 'w1', host: 'h', pid: 1 };

function setup(jobs = 1): { root: string; store: Store; keys: string[]; jobs: Job[] } {
  const store = tempStore('genjob-queue-');
  const made = Array.from({ length: jobs }, (_, i) =>
    buildJob(`job ${i}`, [{ path: `f${i}.txt`, sha256: sha256Hex(`${i}`) }]),
  );
  for (const j of made) mintJob(store, j);
  return { root: store.root, store, keys: made.map((j) => j.key), jobs: made };
}

function age(path: string, ms: number): void {
  const past = new Date(Date.now() - ms);
  utimesSync(path, past, past);
}

describe('claim', () => {
  it('moves the job from queue/ to running/ for exactly one claimant', () => {
    const { store, keys } = setup();
    const key = keys[0]!;
    const wins = ['a', 'b', 'c', 'd'].map((w) => claim(store, key, w));
    expect(wins).toEqual([true, false, false, false]);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([]);
    expect(readdirSync(store.layout.dir('running'))).toEqual([`${key}.json`]);
    expect(readJournal(store, key).filter((e) => e.event === 'claimed')).toHaveLength(1);
  });

  it('claims each queued job once, never one it was asked to skip, then reports the queue empty', () => {
    const { store, keys } = setup(3);
    const skipped = keys[0]!;
    const first = claimNext(store, 'w', new Set([skipped]));
    const second = claimNext(store, 'w', new Set([skipped]));
    expect(claimNext(store, 'w', new Set([skipped]))).toBeUndefined();
    expect(new Set([first, second])).toEqual(new Set(keys.slice(1)));
    expect(claimNext(store, 'w')).toBe(skipped);
    expect(claimNext(store, 'w')).toBeUndefined();
  });
});

describe('attempts and epochs', () => {
  it('gives each attempt at a key a strictly larger epoch and makes it the lease', () => {
    const { store, keys } = setup();
    const key = keys[0]!;
    const epochs = [1, 2, 3].map(() => beginAttempt(store, key, W, 60, 'local').epoch);
    expect(epochs).toEqual([1, 2, 3]);
    expect(epochsOf(store, key)).toEqual([1, 2, 3]);
    expect(readLease(store, key)?.epoch).toBe(3);
    expect(readAttempt(store, key, 2)?.worker).toEqual(W);
  });

  it('never reuses an epoch when a crash falls anywhere in beginAttempt, including between the exclusive create and the lease write', () => {
    const { root, keys } = setup();
    const key = keys[0]!;
    const probe = crashingFs(nodeFs, Number.POSITIVE_INFINITY);
    beginAttempt(new Store(root, probe), key, W, 60, 'local');
    const calls = probe.mutations;
    const between = probe.log.findIndex((l) => l.includes('linkSync')) + 2; // the call just after the link
    expect(between).toBeGreaterThan(1);
    const seen: number[] = [1];
    for (let n = 1; n <= calls; n++) {
      const fs = crashingFs(nodeFs, n);
      expect(() => beginAttempt(new Store(root, fs), key, W, 60, 'local'), `crash at #${n}`).toThrow();
      const after = beginAttempt(new Store(root), key, W, 60, 'local');
      expect(after.epoch, `crash at #${n} (${fs.log.at(-1)})`).toBeGreaterThan(Math.max(...seen));
      expect(readLease(new Store(root), key)?.epoch).toBe(after.epoch);
      seen.push(...epochsOf(new Store(root), key));
    }
    const all = epochsOf(new Store(root), key);
    expect(new Set(all).size).toBe(all.length);
    expect(between).toBeLessThanOrEqual(calls); // the interesting window was among the crash points
  });

  it('reports epoch 0 for a key never attempted', () => {
    const { store, keys } = setup();
    expect(currentEpoch(store, keys[0]!)).toBe(0);
  });
});

describe('lease', () => {
  it('beats by touching the lease, only for the epoch that holds it', () => {
    const { store, keys } = setup();
    const key = keys[0]!;
    claim(store, key, 'w');
    beginAttempt(store, key, W, 60, 'local');
    age(store.layout.lease(key), 120_000);
    expect(leaseAgeMs(store, key)).toBeGreaterThan(100_000);
    expect(beat(store, key, 2)).toBe(false);
    expect(leaseAgeMs(store, key)).toBeGreaterThan(100_000);
    expect(beat(store, key, 1)).toBe(true);
    expect(leaseAgeMs(store, key)).toBeLessThan(60_000);
  });

  it('ages a claimed job without a lease yet from its claim, and a beat without a lease reports it lost', () => {
    const { store, keys } = setup();
    const key = keys[0]!;
    claim(store, key, 'w');
    expect(leaseAgeMs(store, key)).toBeLessThan(60_000);
    expect(leaseAgeMs(store, key, Date.now() + 120_000)).toBeGreaterThan(100_000);
    expect(beat(store, key, 1)).toBe(false);
  });
});

describe('reapStale', () => {
  it('leaves a job whose lease beat within the TTL, and requeues one whose beat is older', async () => {
    const { store, keys } = setup(2);
    const [fresh, stale] = keys as [string, string];
    for (const k of keys) {
      claim(store, k, 'w');
      beginAttempt(store, k, W, 30, 'local');
    }
    age(store.layout.lease(stale), 31_000);
    const staleBytes = readFileSync(store.layout.jobFile('running', stale));
    const reaped = await reapStale(store, 30);
    expect(reaped.map((r) => [r.key, r.epoch])).toEqual([[stale, 1]]);
    expect(existsSync(store.layout.jobFile('running', fresh))).toBe(true);
    // never deletes: the same bytes, back in queue/; its attempt record stays, its lease goes
    expect(readFileSync(store.layout.jobFile('queue', stale))).toEqual(staleBytes);
    expect(existsSync(store.layout.lease(stale))).toBe(false);
    expect(epochsOf(store, stale)).toEqual([1]);
    expect(readJournal(store, stale).some((e) => e.event === 'reaped' && e.epoch === 1)).toBe(true);
    // the next attempt is epoch + 1
    claim(store, stale, 'w2');
    expect(beginAttempt(store, stale, W, 30, 'local').epoch).toBe(2);
  });

  it('reaps a claim whose worker died before writing any lease, once the claim is older than the TTL', async () => {
    const { store, keys } = setup();
    const key = keys[0]!;
    claim(store, key, 'w');
    expect(await reapStale(store, 30)).toEqual([]);
    const reaped = await reapStale(store, 30, Date.now() + 31_000);
    // the re-check under the lock uses the real clock, so a just-made claim is not taken
    expect(reaped).toEqual([]);
    expect(await reapStale(store, 0.001)).toHaveLength(1);
    expect(existsSync(store.layout.jobFile('queue', key))).toBe(true);
  });

  it('never deletes a job file, whatever the TTL', async () => {
    const { store, keys } = setup(3);
    for (const k of keys.slice(0, 2)) claim(store, k, 'w');
    const before = new Set(keys);
    await reapStale(store, 0.001);
    await reapStale(store, 0.001);
    const present = new Set(
      ['queue', 'running'].flatMap((s) => readdirSync(store.layout.dir(s)).map((n) => n.slice(0, 64))),
    );
    expect(present).toEqual(before);
  });
});

describe('dead letters', () => {
  it('keep the raw bytes byte for byte with a .why.json beside them, and journal the reason', () => {
    const { store, keys } = setup();
    const raw = Buffer.from([0x7b, 0x00, 0xff, 0xfe, 0x0a]);
    const name = deadLetterBytes(store, `${keys[0]}.receipt.e1`, raw, {
      key: keys[0],
      code: 'EGJ_EPOCH_SUPERSEDED',
      reason: 'late',
    });
    const dead = store.layout.dir('dead');
    expect(readFileSync(join(dead, name))).toEqual(raw);
    const why = JSON.parse(readFileSync(join(dead, `${name}.why.json`), 'utf8'));
    expect(why).toMatchObject({ key: keys[0], code: 'EGJ_EPOCH_SUPERSEDED', reason: 'late' });
    expect(typeof why.at).toBe('string');
    expect(
      readJournal(store, keys[0]).some(
        (e) => e.event === 'dead-lettered' && e.code === 'EGJ_EPOCH_SUPERSEDED',
      ),
    ).toBe(true);
  });

  it('move a file into dead/ unchanged, and report a file already gone as null', () => {
    const { store, keys } = setup();
    const from = store.layout.jobFile('queue', keys[0]!);
    const bytes = readFileSync(from);
    const name = deadLetterFile(store, from, `${keys[0]}.job`, {
      key: keys[0],
      code: 'EGJ_JOB_INVALID',
      reason: 'bad',
    });
    expect(name).not.toBeNull();
    expect(readFileSync(join(store.layout.dir('dead'), name!))).toEqual(bytes);
    expect(existsSync(from)).toBe(false);
    expect(deadLetterFile(store, from, 'x', { code: 'EGJ_X', reason: 'gone' })).toBeNull();
  });

  it('never overwrite an earlier dead letter of the same material', () => {
    const { store } = setup();
    const a = deadLetterBytes(store, 'same', Buffer.from('a'), { code: 'EGJ_X', reason: 'a' });
    const b = deadLetterBytes(store, 'same', Buffer.from('b'), { code: 'EGJ_X', reason: 'b' });
    expect(a).not.toBe(b);
    expect(readdirSync(store.layout.dir('dead'))).toHaveLength(4);
  });
});

describe('mint', () => {
  it('is a no-op for the same job and a conflict for another job under the same key', () => {
    const { store, jobs } = setup();
    expect(mintJob(store, jobs[0]!).minted).toBe(false);
    const tampered = { ...jobs[0]!, constraints: { max_file_bytes: 1, max_total_bytes: 1 } };
    expect(() => mintJob(store, tampered)).toThrow(expect.objectContaining({ code: 'EGJ_KEY_CONFLICT' }));
    writeFileSync(join(store.layout.tmp, 'unrelated'), ''); // a stray file does not confuse the check
    expect(mintJob(store, jobs[0]!).state).toBe('queue');
  });

  it('leaves the job in queue/ or nowhere — never torn — when a crash falls anywhere in mint', () => {
    const { root } = setup(0);
    const job = buildJob('crashy', [{ path: 'x.txt', sha256: null }]);
    const probe = crashingFs(nodeFs, Number.POSITIVE_INFINITY);
    const probeRoot = tempDir('genjob-queue-');
    mintJob(new Store(probeRoot, probe).ensure(), job);
    for (let n = 1; n <= probe.mutations; n++) {
      const dir = tempStore('genjob-queue-').root;
      try {
        mintJob(new Store(dir, crashingFs(nodeFs, n)), job);
      } catch (err) {
        expect(isCrash(err)).toBe(true);
      }
      const queued = readdirSync(new Store(dir).layout.dir('queue'));
      if (queued.length > 0)
        expect(readFileSync(join(dir, '.gen/queue', queued[0]!))).toEqual(
          readFileSync(join(probeRoot, '.gen/queue', `${job.key}.json`)),
        );
      expect(mintJob(new Store(dir), job).key).toBe(job.key);
    }
    expect(root).toBeTruthy();
  });
});
