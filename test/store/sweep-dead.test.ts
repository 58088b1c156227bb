// What dead processes leave is found by pid + start time and cleared at once: staging directories of a
// worker that died mid-extract (work and reap sweep them), and a lease whose worker on this host is gone
// (reaped without waiting for its TTL). A live owner's material is never touched.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { beginAttempt } from '../../src/store/attempts.js';
import { thisProcess } from '../../src/store/process-identity.js';
import { reapStale } from '../../src/store/reap.js';
import { sweepDeadStaging } from '../../src/store/sweep-staging.js';
import { makeStaging } from '../../src/transport/staging-writer.js';
import { tempDir, tempStore } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout);
}

describe('sweepDeadStaging', () => {
  it('removes the staging directories of gone workers and keeps those of live ones', () => {
    const store = tempStore('genjob-sweep-');
    const ours = makeStaging(store.layout.staging);
    expect(ours).toMatch(new RegExp(`/\\.extract-${process.pid}-${thisProcess().start}-`));
    const dead = join(store.layout.staging, `.extract-${deadPid()}-12345-abcdef`);
    const reused = join(store.layout.staging, `.extract-${process.ppid}-1-abcdef`); // a live pid, another start
    for (const d of [dead, reused]) {
      mkdirSync(join(d, 'src'), { recursive: true });
      writeFileSync(join(d, 'src', 'a.py'), 'half');
    }
    const removed = sweepDeadStaging(store);
    expect(removed.sort()).toEqual([dead, reused].sort());
    expect(existsSync(ours)).toBe(true);
    expect(existsSync(dead) || existsSync(reused)).toBe(false);
  });

  it('refuses a staging/ that is a link (a clone can commit one), removing nothing where it points', () => {
    const store = tempStore('genjob-sweep-');
    const outside = join(tempDir('genjob-sweep-outside-'), 'outside');
    const theirs = join(outside, `.extract-${deadPid()}-12345-abcdef`);
    mkdirSync(theirs, { recursive: true });
    writeFileSync(join(theirs, 'a.py'), "not genjob's");
    rmSync(store.layout.staging, { recursive: true });
    symlinkSync(outside, store.layout.staging);
    expect(thrown(() => sweepDeadStaging(store))).toMatchObject({
      code: 'EGJ_BAD_PATH',
      message: expect.stringContaining(`${store.layout.staging}: a symbolic link;`),
    });
    expect(existsSync(join(theirs, 'a.py'))).toBe(true);
  });
});

describe('reapStale', () => {
  it('reaps at once a lease held by a worker of this host that is gone, and leaves a live one', async () => {
    const store = tempStore('genjob-sweep-');
    const [gone, live] = ['a'.repeat(64), 'b'.repeat(64)];
    for (const key of [gone, live]) writeFileSync(store.layout.jobFile('running', key), '{}');
    beginAttempt(store, gone, { id: 'w-gone', host: hostname(), pid: deadPid(), start: 1 }, 3600, 'local');
    beginAttempt(store, live, { id: 'w-live', ...thisProcess() }, 3600, 'local');
    const reaped = await reapStale(store, 3600);
    expect(reaped.map((r) => r.key)).toEqual([gone]);
    expect(existsSync(store.layout.jobFile('queue', gone))).toBe(true);
    expect(existsSync(store.layout.jobFile('running', live))).toBe(true);
  });
});
