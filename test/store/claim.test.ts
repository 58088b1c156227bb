// Claiming: a claim that fails after its rename is undone at once and says so; claimNext takes the oldest
// job and tries each key once; the batch claimer lists the queue once per batch, again when the batch is used
// up after a lost race, leaves declined keys queued, and claims in mint order (the job file's mtime, not the
// key) — one temp .gen/ per test.
import { readdirSync, renameSync, utimesSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { Claimer, claim, claimNext } from '../../src/store/claim.js';
import { mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

afterEach(() => {
  vi.restoreAllMocks();
});

function mintMany(store: Store, n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => {
    const job = buildJob(`job ${from + i}`, [{ path: `f${from + i}.txt`, sha256: sha256Hex(`${from + i}`) }]);
    mintJob(store, job);
    // mint times one second apart, in this order (a fast loop would mint several in one tick)
    const at = 1_700_000_000 + from + i;
    utimesSync(store.layout.jobFile('queue', job.key), at, at);
    return job.key;
  });
}

/** The keys in mint order, and a check that it differs from key order (else the test proves nothing). */
function unlikeKeyOrder(keys: string[]): string[] {
  expect(keys).not.toEqual([...keys].sort());
  return keys;
}

/** `store` where every claim (a rename out of queue/) loses the race: another worker moves the job first. */
function othersWinEveryRace(store: Store, attempted: string[]): Store {
  const queue = store.layout.dir('queue');
  return hookedStore(store, (call, args, proceed) => {
    const [from, to] = args as [string, string];
    if (call === 'renameSync' && dirname(from) === queue) {
      attempted.push(from);
      renameSync(from, to);
    }
    return proceed();
  });
}

/** This process's journal segment (the file a journal line is appended to). */
const isSegment = (path: unknown) => /\/\.gen\/journal\.d\/[^/]+\.jsonl$/.test(String(path));

describe('claim', () => {
  it('puts the job back in queue/ when its journal line cannot be written, and says so in the error', () => {
    const store = tempStore('genjob-claim-');
    const [key] = mintMany(store, 1) as [string];
    const noJournal = hookedStore(store, (call, args, proceed) => {
      if (call === 'openSync' && isSegment(args[0])) throw sysError('EIO', -5, 'open');
      return proceed();
    });
    const err = thrown(() => claim(noJournal, key, 'w'));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toMatch(/\/journal\.d\/[^/]+\.jsonl: open failed: i\/o error \(EIO\);/);
    expect(err.message.endsWith(`; job ${key.slice(0, 12)} was put back in queue/`)).toBe(true);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${key}.json`]);
    expect(readdirSync(store.layout.dir('running'))).toEqual([]);
  });

  it('leaves the job in running/ and names `genjob reap` when putting it back fails too', () => {
    const store = tempStore('genjob-claim-');
    const [key] = mintMany(store, 1) as [string];
    const running = store.layout.jobFile('running', key);
    const twoFaults = hookedStore(store, (call, args, proceed) => {
      if (call === 'openSync' && isSegment(args[0])) throw sysError('EIO', -5, 'open');
      if (call === 'renameSync' && args[0] === running) throw sysError('EIO', -5, 'rename');
      return proceed();
    });
    const err = thrown(() => claim(twoFaults, key, 'w'));
    expect(err.message).toMatch(/\/journal\.d\/[^/]+\.jsonl: open failed: i\/o error \(EIO\);/);
    expect(
      err.message.endsWith(
        `; job ${key.slice(0, 12)} is left in running/ without a lease; \`genjob reap\` returns it after the lease TTL`,
      ),
    ).toBe(true);
    expect(readdirSync(store.layout.dir('running'))).toEqual([`${key}.json`]);
  });

  it('adds no note when the rename itself fails: the job never left queue/', () => {
    const store = tempStore('genjob-claim-');
    const [key] = mintMany(store, 1) as [string];
    const queued = store.layout.jobFile('queue', key);
    const noRename = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === queued) throw sysError('EACCES', -13, 'rename');
      return proceed();
    });
    const err = thrown(() => claim(noRename, key, 'w'));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).not.toContain('; job ');
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${key}.json`]);
  });
});

describe('claimNext', () => {
  it('claims the oldest queued job: mint order, not key order', () => {
    const store = tempStore('genjob-claim-');
    const keys = unlikeKeyOrder(mintMany(store, 4));
    expect(claimNext(store, 'w')).toBe(keys[0]);
    expect(claimNext(store, 'w', new Set([keys[1]!]))).toBe(keys[2]);
  });

  it('tries each listed key once, oldest first, when other workers win every race, then reports none', () => {
    const store = tempStore('genjob-claim-');
    const keys = mintMany(store, 4);
    const attempted: string[] = [];
    expect(claimNext(othersWinEveryRace(store, attempted), 'w')).toBeUndefined();
    expect(attempted).toEqual(keys.map((k) => store.layout.jobFile('queue', k)));
  });

  it('orders jobs minted in the same tick by key', () => {
    const store = tempStore('genjob-claim-');
    const keys = mintMany(store, 3);
    for (const k of keys) utimesSync(store.layout.jobFile('queue', k), 1_700_000_000, 1_700_000_000);
    expect(drain(new Claimer(store, 'w'))).toEqual([...keys].sort());
  });

  it('skips a job another worker claimed between the listing and its stat; any other stat error is thrown', () => {
    const store = tempStore('genjob-claim-');
    const keys = mintMany(store, 3);
    const takenBeforeStat = hookedStore(store, (call, args, proceed) => {
      if (call === 'statSync' && args[0] === store.layout.jobFile('queue', keys[0]!))
        claim(store, keys[0]!, 'b');
      return proceed();
    });
    expect(claimNext(takenBeforeStat, 'w')).toBe(keys[1]);
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'statSync' && args[0] === store.layout.jobFile('queue', keys[2]!))
        throw sysError('EIO', -5, 'stat', args[0] as string);
      return proceed();
    });
    const err = thrown(() => claimNext(failing, 'w'));
    expect([err instanceof IoError, err.message]).toEqual([true, expect.stringContaining('EIO')]);
    expect(readdirSync(store.layout.dir('queue'))).toEqual([`${keys[2]}.json`]);
  });

  it('keeps a job requeued by a rename in its place: its mint time goes with the file', () => {
    const store = tempStore('genjob-claim-');
    const keys = mintMany(store, 3);
    expect(claimNext(store, 'w')).toBe(keys[0]);
    renameSync(store.layout.jobFile('running', keys[0]!), store.layout.jobFile('queue', keys[0]!));
    expect(claimNext(store, 'w')).toBe(keys[0]);
  });
});

function drain(c: Claimer, accept?: (k: string) => boolean): string[] {
  const got: string[] = [];
  for (let k = c.next(accept); k !== undefined; k = c.next(accept)) got.push(k);
  return got;
}

describe('Claimer', () => {
  it('claims 60 queued jobs with one listing of the queue and one rename each, plus one listing to see it empty', () => {
    const store = tempStore('genjob-claimer-');
    const keys = mintMany(store, 60);
    const renamed: string[] = [];
    const counted = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && dirname(args[0] as string) === store.layout.dir('queue'))
        renamed.push(args[0] as string);
      return proceed();
    });
    const c = new Claimer(counted, 'w');
    expect(new Set(drain(c))).toEqual(new Set(keys));
    expect(c.listings).toBe(2);
    expect(renamed.sort()).toEqual(keys.map((k) => store.layout.jobFile('queue', k)).sort());
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

  it('lists again in the same call when another worker took every key of a fresh listing, and claims a job queued since', () => {
    const store = tempStore('genjob-claimer-');
    const keys = mintMany(store, 3);
    let late = '';
    const raced = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && dirname(args[0] as string) === store.layout.dir('queue') && late === '') {
        for (const k of keys) claim(store, k, 'b');
        [late] = mintMany(store, 1, 100) as [string];
      }
      return proceed();
    });
    const c = new Claimer(raced, 'a');
    expect(c.next()).toBe(late);
    expect(c.listings).toBe(2);
  });

  it('offers declined keys again in mint order', () => {
    const store = tempStore('genjob-claimer-');
    const keys = unlikeKeyOrder(mintMany(store, 4));
    const c = new Claimer(store, 'w');
    const held = new Set([keys[0]!, keys[1]!]);
    expect(c.next((k) => !held.has(k))).toBe(keys[2]);
    expect([c.next(), c.next(), c.next()]).toEqual([keys[0], keys[1], keys[3]]);
  });

  it('looks once for newly queued jobs when every key left in its batch is declined', () => {
    const store = tempStore('genjob-claimer-');
    const [held] = mintMany(store, 1) as [string];
    const c = new Claimer(store, 'w');
    const notHeld = (k: string) => k !== held;
    expect(c.next(notHeld)).toBeUndefined();
    expect(c.held).toBe(1);
    const [fresh] = mintMany(store, 1, 100) as [string];
    expect(c.next(notHeld)).toBe(fresh);
    expect(c.listings).toBe(2);
    expect(c.held).toBe(1);
  });

  it('claims a run of jobs in the order they were minted', () => {
    const store = tempStore('genjob-claimer-');
    const keys = unlikeKeyOrder(mintMany(store, 30));
    expect(drain(new Claimer(store, 'w'))).toEqual(keys);
  });

  it('racing claimers take the oldest job still queued, each job once', () => {
    const store = tempStore('genjob-claimer-');
    const keys = mintMany(store, 20);
    const a = new Claimer(store, 'a');
    const b = new Claimer(store, 'b');
    const got: string[] = [];
    // both have listed; they alternate, each losing the races the other already won
    for (let i = 0; got.length < keys.length; i++) got.push((i % 2 === 0 ? a : b).next()!);
    expect(got).toEqual(keys);
    expect(a.next()).toBeUndefined();
  });
});
