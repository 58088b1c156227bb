// Supersession (src/store/supersede.ts): a superseded job's dead letter names its successor; following
// the links finds the job standing for a key now — the key itself while it is live (minted again), a
// chain followed to its end, a loop someone made by hand stopped where it repeats; a decider follows only
// links the user's secret sealed.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { macOf } from '../../src/core/mac.js';
import { deadLetterFile } from '../../src/store/dead-letter.js';
import { findJob } from '../../src/store/job-states.js';
import { readJournal } from '../../src/store/journal.js';
import { mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { currentKey, deadIndex, SUPERSEDED, successorIn, supersede } from '../../src/store/supersede.js';
import { tempStore } from '../helpers/temp-store.js';

function job(store: Store, n: number): string {
  return mintJob(store, buildJob(`job ${n}`, [{ path: `f${n}`, sha256: null }])).key;
}
const live = (store: Store) => (k: string) => findJob(store, k) !== undefined;
const SECRET = randomBytes(32);

describe('supersession', () => {
  it('links a superseded job to its successor, in dead/ and in the journal', () => {
    const store = tempStore('genjob-sup-');
    const [a, b] = [job(store, 1), job(store, 2)];
    const names = supersede(store, a, b, findJob(store, a)!, SECRET);
    expect(names).toHaveLength(1);
    expect(findJob(store, a)).toBeUndefined();
    const index = deadIndex(store);
    expect(successorIn(store, index, a)).toBe(b);
    expect(successorIn(store, index, b)).toBeUndefined();
    expect(readJournal(store, a).map((e) => [e.event, e.successor])).toContainEqual(['superseded', b]);
    expect(readJournal(store, b).map((e) => [e.event, e.predecessor])).toContainEqual(['reminted', a]);
    expect(SUPERSEDED).toBe('EGJ_SUPERSEDED');
  });

  it('follows a chain to the job standing for a key now, and stops at a live key or one dead for another reason', () => {
    const store = tempStore('genjob-sup-');
    const [a, b, c] = [job(store, 1), job(store, 2), job(store, 3)];
    supersede(store, a, b, findJob(store, a)!, SECRET);
    supersede(store, b, c, findJob(store, b)!, SECRET);
    expect(currentKey(store, a, deadIndex(store), live(store))).toBe(c);
    expect(currentKey(store, c, deadIndex(store), live(store))).toBe(c);
    // the old key minted again is itself again
    mintJob(store, buildJob('job 1', [{ path: 'f1', sha256: null }]));
    expect(currentKey(store, a, deadIndex(store), live(store))).toBe(a);
    // c superseded by a, which is dead again (dropped): the chain ends there
    const found = findJob(store, a)!;
    deadLetterFile(store, found.file, `${a}.job`, { key: a, code: 'EGJ_DROPPED', reason: 'x' });
    supersede(store, c, a, findJob(store, c)!, SECRET);
    const index = deadIndex(store);
    expect(currentKey(store, b, index, live(store))).toBe(a);
  });

  it('does not follow a dead letter that is not a supersession, or names no key (64 hex digits, nothing around them)', () => {
    for (const next of ['nope', `${'b'.repeat(64)}0`, `x${'b'.repeat(64)}`]) {
      const store = tempStore('genjob-sup-');
      const a = job(store, 1);
      deadLetterFile(store, findJob(store, a)!.file, `${a}.job`, {
        key: a,
        code: SUPERSEDED,
        reason: 'x',
        superseded_by: next,
      });
      expect(currentKey(store, a, deadIndex(store), live(store))).toBe(a);
    }
    const store = tempStore('genjob-sup-');
    const a = job(store, 1);
    const b = job(store, 2);
    deadLetterFile(store, findJob(store, b)!.file, `${b}.job`, {
      key: b,
      code: 'EGJ_DROPPED',
      reason: 'x',
      superseded_by: a,
    });
    expect(successorIn(store, deadIndex(store), b)).toBeUndefined();
  });
});

describe("the user's seal on a link", () => {
  it('is followed by a decider only under the secret that sealed it', () => {
    const store = tempStore('genjob-sup-');
    const [a, b, c] = [job(store, 1), job(store, 2), job(store, 3)];
    supersede(store, a, b, findJob(store, a)!, SECRET);
    supersede(store, b, c, findJob(store, b)!, randomBytes(32)); // another user's remint
    const index = deadIndex(store);
    expect(successorIn(store, index, a, SECRET)).toBe(b);
    expect(successorIn(store, index, a, randomBytes(32))).toBeUndefined();
    expect(successorIn(store, index, b, SECRET)).toBeUndefined();
    expect(currentKey(store, a, index, live(store), SECRET)).toBe(b); // stops at the link not sealed
    expect(currentKey(store, a, index, live(store))).toBe(c); // a reader follows any
  });

  it('holds only for its two keys: a link copied to another key, or pointed elsewhere, is not followed', () => {
    const store = tempStore('genjob-sup-');
    const [a, b, c, d] = [job(store, 1), job(store, 2), job(store, 3), job(store, 4)];
    supersede(store, a, b, findJob(store, a)!, SECRET);
    const why = JSON.parse(
      readFileSync(join(store.layout.dir('dead'), `${deadIndex(store).get(a)}.why.json`), 'utf8'),
    );
    expect(why.link_seal).toMatch(/^[0-9a-f]{64}$/);
    // a's seal on a dead letter of c naming d
    deadLetterFile(store, findJob(store, c)!.file, `${c}.job`, { ...why, key: c, superseded_by: d });
    expect(successorIn(store, deadIndex(store), c, SECRET)).toBeUndefined();
    expect(successorIn(store, deadIndex(store), c)).toBe(d);
    // in another store with the same jobs: a's seal on a's dead letter naming c, then with no seal at all
    for (const [changed, reader] of [
      [{ ...why, superseded_by: c }, c],
      [{ ...why, link_seal: undefined }, b],
    ] as const) {
      const other = tempStore('genjob-sup-');
      for (const n of [1, 2, 3]) job(other, n);
      deadLetterFile(other, findJob(other, a)!.file, `${a}.job`, changed);
      expect(successorIn(other, deadIndex(other), a, SECRET)).toBeUndefined();
      expect(successorIn(other, deadIndex(other), a)).toBe(reader);
    }
  });
});

describe('a superseded job', () => {
  it('takes its receipt and outputs along to dead/, each under the sealed reason', () => {
    const store = tempStore('genjob-sup-');
    const [a, b] = [job(store, 1), job(store, 2)];
    writeFileSync(store.layout.receipt(a), '{}');
    mkdirSync(store.layout.outDir(a), { recursive: true });
    writeFileSync(join(store.layout.outDir(a), 'f1'), 'x');
    const names = supersede(store, a, b, findJob(store, a)!, SECRET);
    expect(names.map((n) => n.replace(/\.\d+-[0-9a-f]+$/, ''))).toEqual([
      `${a}.job`,
      `${a}.receipt`,
      `${a}.out`,
    ]);
    expect(existsSync(store.layout.receipt(a))).toBe(false);
    expect(existsSync(store.layout.outDir(a))).toBe(false);
    for (const name of names) {
      const why = JSON.parse(readFileSync(join(store.layout.dir('dead'), `${name}.why.json`), 'utf8'));
      // the seal's format is kept from one genjob to the next: HMAC-SHA256 over both keys, kind apart
      expect(why).toEqual({
        at: expect.any(String),
        key: a,
        code: SUPERSEDED,
        reason: `superseded by ${b}`,
        superseded_by: b,
        link_seal: macOf(SECRET, 'genjob-supersede-v1', a, b),
      });
    }
    expect(readJournal(store, a).find((e) => e.event === 'superseded')?.reason).toBe(`superseded by ${b}`);
    expect(readJournal(store, b).find((e) => e.event === 'reminted')?.reason).toBe(`successor of ${a}`);
  });

  it('is followed along at most 64 links', () => {
    const store = tempStore('genjob-sup-');
    const keys = Array.from({ length: 70 }, (_, n) => job(store, n));
    for (let n = 0; n < 69; n++) supersede(store, keys[n]!, keys[n + 1]!, findJob(store, keys[n]!)!, SECRET);
    const index = deadIndex(store);
    expect(currentKey(store, keys[0]!, index, live(store), SECRET)).toBe(keys[64]);
    expect(currentKey(store, keys[10]!, index, live(store))).toBe(keys[69]);
  });
});

describe('a loop of supersessions made by hand', () => {
  it('is followed until a key repeats, never forever', () => {
    const store = tempStore('genjob-sup-');
    const [a, b] = [job(store, 1), job(store, 2)];
    supersede(store, a, b, findJob(store, a)!, SECRET);
    supersede(store, b, a, findJob(store, b)!, SECRET);
    expect(currentKey(store, a, deadIndex(store), live(store))).toBe(b);
    expect(currentKey(store, b, deadIndex(store), live(store))).toBe(a);
  });
});
