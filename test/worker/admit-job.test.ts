// Admitting a claimed job: a job file that is not a job goes to dead/, but a disk that fails while
// it is read is the environment's fault, not the job's: EGJ_IO, and the job stays to be put back.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { buildJob } from '../../src/core/job.js';
import { type FsPort, namedFs } from '../../src/store/fs-port.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import { Store } from '../../src/store/store.js';
import { admitClaimed } from '../../src/worker/admit-job.js';
import { tempStore } from '../helpers/temp-store.js';

const job = buildJob('say hi', [{ path: 'a.txt', sha256: null }]);

function claimed(bytes: Buffer): Store {
  const store = tempStore('genjob-admit-');
  fs.writeFileSync(store.layout.jobFile('running', job.key), bytes);
  return store;
}

describe('admitClaimed', () => {
  it('admits a well-formed job', () => {
    const store = claimed(jobFileBytes(job));
    expect(admitClaimed(store, job.key, 3)).toMatchObject({ job: { key: job.key } });
  });

  it('sends a job file that is not a job to dead/, with the reason', () => {
    const store = claimed(Buffer.from('{"not": "a job"}'));
    expect(admitClaimed(store, job.key, 3)).toMatchObject({ key: job.key, outcome: 'dead' });
    expect(fs.existsSync(store.layout.jobFile('running', job.key))).toBe(false);
    expect(fs.readdirSync(store.layout.dir('dead')).length).toBeGreaterThan(0);
  });

  it('throws EGJ_IO and dead-letters nothing when the disk fails while the job file is read', () => {
    const store = claimed(jobFileBytes(job));
    const running = store.layout.jobFile('running', job.key);
    const failingOpen = namedFs({
      ...fs,
      openSync: (path: fs.PathLike, ...rest: unknown[]) => {
        if (String(path) === running)
          throw Object.assign(new Error(`EIO: i/o error, open '${running}'`), {
            code: 'EIO',
            errno: -5,
            syscall: 'open',
          });
        return (fs.openSync as (...a: unknown[]) => number)(path, ...rest);
      },
    } as unknown as FsPort);
    const flaky = new Store(store.root, failingOpen);
    expect(() => admitClaimed(flaky, job.key, 3)).toThrow(IoError);
    expect(fs.existsSync(running)).toBe(true);
    expect(fs.readdirSync(store.layout.dir('dead'))).toEqual([]);
  });
});

// A receipt and outputs left in place with the job in running/ are recovered (the job moved to received/)
// only when the receipt is the current attempt's: a given-up attempt's (dropped, cancelled, retried,
// superseded, whose receipt a crash left behind) goes to dead/ and the job is admitted to generate again.
describe('admitClaimed with a receipt in place', () => {
  const digest = jobFileDigest();
  function landed(epoch: number, marks: Record<string, string> = {}, jobDigest = digest): Store {
    const store = claimed(jobFileBytes(job));
    fs.mkdirSync(store.layout.attemptsDir(job.key), { recursive: true });
    for (let e = 1; e <= epoch; e++) fs.writeFileSync(store.layout.attempt(job.key, e), '{}');
    for (const [name, value] of Object.entries(marks))
      fs.writeFileSync(`${store.layout.attemptsDir(job.key)}/${name}`, value);
    fs.writeFileSync(store.layout.receipt(job.key), JSON.stringify({ epoch, job_digest: jobDigest }));
    fs.mkdirSync(store.layout.outDir(job.key), { recursive: true });
    return store;
  }
  const deadNames = (store: Store) =>
    fs.readdirSync(store.layout.dir('dead')).filter((n) => !n.endsWith('.why.json'));

  it("recovers the current attempt's receipt", () => {
    const store = landed(2, { 'minted-after': '1', 'retry-after': '1' });
    expect(admitClaimed(store, job.key, 3)).toEqual({ key: job.key, outcome: 'recovered' });
    expect(fs.existsSync(store.layout.jobFile('received', job.key))).toBe(true);
  });

  for (const [what, marks] of [
    ['minted again after it was given up', { 'minted-after': '2' }],
    ['retried after it', { 'retry-after': '2' }],
  ] as const)
    it(`refuses a receipt of an attempt the key was ${what}`, () => {
      const store = landed(2, marks);
      expect(admitClaimed(store, job.key, 3)).toMatchObject({ job: { key: job.key } });
      expect(fs.existsSync(store.layout.receipt(job.key))).toBe(false);
      expect(fs.existsSync(store.layout.outDir(job.key))).toBe(false);
      expect(
        deadNames(store)
          .map((n) => n.replace(/\.\d+-[0-9a-f]+$/, ''))
          .sort(),
      ).toEqual([`${job.key}.out`, `${job.key}.receipt.e2`]);
    });

  it('refuses a receipt of an older epoch than the newest, or of another job digest', () => {
    const older = landed(2);
    fs.writeFileSync(older.layout.receipt(job.key), JSON.stringify({ epoch: 1, job_digest: digest }));
    expect(admitClaimed(older, job.key, 3)).toMatchObject({ job: { key: job.key } });
    expect(fs.existsSync(older.layout.receipt(job.key))).toBe(false);
    const other = landed(1, {}, 'e'.repeat(64));
    expect(admitClaimed(other, job.key, 3)).toMatchObject({ job: { key: job.key } });
    expect(fs.existsSync(other.layout.receipt(job.key))).toBe(false);
  });
});

function jobFileDigest(): string {
  const bytes = jobFileBytes(job);
  return createHash('sha256')
    .update(bytes.subarray(0, bytes.length - 1))
    .digest('hex');
}
