// Giving a job back (release: to queue/ or dead/ while this attempt's epoch owns it), at the lease: the
// lease goes before the job leaves running/, so a worker that claims the job the moment it is back in
// queue/ keeps its own lease; a move that fails leaves the job in running/ with its lease as it was —
// one temp .gen/ per test.
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { claim } from '../../src/store/claim.js';
import { beat, readLease } from '../../src/store/lease.js';
import { mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { release } from '../../src/worker/release-job.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { racingClaim } from '../helpers/racing-claim.js';
import { tempStore } from '../helpers/temp-store.js';

const WHY = { code: 'EGJ_TEST', reason: 'given back by the test' };

/** A store with one claimed job whose attempt (epoch 1) holds the lease. */
function claimed(): { store: Store; key: string } {
  const store = tempStore('genjob-release-');
  const job = buildJob('release job', [{ path: 'f.txt', sha256: sha256Hex('f') }]);
  mintJob(store, job);
  claim(store, job.key, 'w1');
  beginAttempt(store, job.key, { id: 'w1', host: 'elsewhere', pid: 1 }, 30, 'local');
  return { store, key: job.key };
}

describe('release at the lease', () => {
  it('never removes a lease once the job is back in queue/: the next claim keeps its own', async () => {
    const { store, key } = claimed();
    const { racing, claimNow } = racingClaim(store, key);
    expect(await release(racing, key, 1, 'queue', WHY)).toBe(true);
    claimNow();
    expect(readLease(store, key)?.epoch).toBe(2);
    expect(beat(store, key, 2)).toBe(true);
  });

  it('leaves the job in running/ with its lease as it was when the move to queue/ fails', async () => {
    const { store, key } = claimed();
    const from = store.layout.jobFile('running', key);
    const lease = store.layout.lease(key);
    const past = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
    utimesSync(lease, past, past);
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === from) throw sysError('EIO', -5, 'rename');
      return proceed();
    });
    await expect(release(failing, key, 1, 'queue', WHY)).rejects.toThrow(/rename failed: i\/o error \(EIO\)/);
    expect(existsSync(from)).toBe(true);
    expect(readLease(store, key)?.epoch).toBe(1);
    // the attempt record linked back: the same file, the same last beat
    expect(statSync(lease).ino).toBe(statSync(store.layout.attempt(key, 1)).ino);
    expect(statSync(lease).mtimeMs).toBe(past.getTime());
  });

  it('moves the job to dead/ and takes its lease with it', async () => {
    const { store, key } = claimed();
    expect(await release(store, key, 1, 'dead', WHY)).toBe(true);
    expect(existsSync(store.layout.jobFile('running', key))).toBe(false);
    expect(readdirSync(store.layout.dir('dead')).some((n) => n.startsWith(`${key}.job`))).toBe(true);
    expect(existsSync(store.layout.lease(key))).toBe(false);
  });

  it('gives nothing back for an epoch that no longer holds the lease', async () => {
    const { store, key } = claimed();
    expect(await release(store, key, 2, 'queue', WHY)).toBe(false);
    expect(existsSync(store.layout.jobFile('running', key))).toBe(true);
    expect(readLease(store, key)?.epoch).toBe(1);
  });
});
