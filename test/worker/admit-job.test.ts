// Admitting a claimed job: a job file that is not a job goes to dead/, but a disk that fails while
// it is read is the environment's fault, not the job's: EGJ_IO, and the job stays to be put back.
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
