// commitResult: the epoch is re-checked under the key lock; a superseded attempt commits nothing and its
// receipt is dead-lettered raw; a receipt of an older epoch already in receipts/ is moved to dead/, not clobbered;
// the commit is made in the durable order and journalled as `received` only when it happened.
import {
  constants,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errnoOf, IoError } from '../../src/core/errors.js';
import { buildJob } from '../../src/core/job.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { claim } from '../../src/store/claim.js';
import { readJournal } from '../../src/store/journal.js';
import { removeLease } from '../../src/store/lease.js';
import { mintJob } from '../../src/store/mint-job.js';
import { reapStale } from '../../src/store/reap.js';
import type { Store } from '../../src/store/store.js';
import { commitResult } from '../../src/worker/commit-result.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';

const W = { id: 'w', host: 'h', pid: 1 };

/** A minted job claimed by worker w with `attempts` attempts begun (the last one holds the lease). */
function setup({ attempts = 1, ttlS = 60 } = {}) {
  const store = tempStore('genjob-commit-');
  const { key } = mintJob(store, buildJob('make x', [{ path: 'x.txt', sha256: null }]));
  claim(store, key, 'w');
  for (let i = 0; i < attempts; i++) beginAttempt(store, key, W, ttlS, 'local');
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

/** The one item of dead/ named `<base>.<stamp>`: its raw bytes (a file) or undefined (a directory), and its why.json. */
function deadItem(store: Store, base: string): { name: string; why: Record<string, unknown> } {
  const dead = store.layout.dir('dead');
  const names = readdirSync(dead).filter((n) => n.startsWith(`${base}.`) && !n.endsWith('.why.json'));
  expect(names).toHaveLength(1);
  const name = names[0]!;
  return { name, why: JSON.parse(readFileSync(join(dead, `${name}.why.json`), 'utf8')) };
}

const receivedEvents = (store: Store, key: string) =>
  readJournal(store, key).filter((e) => e.event === 'received');

describe('commitResult', () => {
  it('commits the newest epoch: out/, then the receipt, then running → received, lease removed', async () => {
    const { store, key, stage, receipt } = setup();
    expect(await commitResult(store, key, 1, receipt(1), stage('one'))).toEqual({ committed: true });
    expect(readFileSync(join(store.layout.outDir(key), 'x.txt'), 'utf8')).toBe('one');
    expect(readFileSync(store.layout.receipt(key))).toEqual(receipt(1));
    expect(readdirSync(store.layout.dir('received'))).toEqual([`${key}.json`]);
    expect(readdirSync(store.layout.dir('leases'))).toEqual([]);
    expect(readdirSync(store.layout.staging)).toEqual([]);
  });

  it('refuses a superseded epoch: nothing committed, its receipt kept raw in dead/ as EGJ_EPOCH_SUPERSEDED', async () => {
    const { store, key, stage, receipt } = setup({ ttlS: 30 });
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(store.layout.lease(key), past, past);
    expect(await reapStale(store, 30)).toHaveLength(1);
    claim(store, key, 'w2');
    beginAttempt(store, key, W, 30, 'local');
    const late = await commitResult(store, key, 1, receipt(1), stage('late'));
    expect(late).toEqual({
      committed: false,
      reason: 'lease lost: this attempt is epoch 1, the newest is 2',
    });
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
    const { store, key, stage, receipt } = setup({ attempts: 2 }); // epoch 2 took over while epoch 1's receipt had landed
    writeFileSync(store.layout.receipt(key), receipt(1));
    expect(await commitResult(store, key, 2, receipt(2), stage('two'))).toEqual({ committed: true });
    expect(readFileSync(store.layout.receipt(key))).toEqual(receipt(2));
    const dead = readdirSync(store.layout.dir('dead')).filter((n) => !n.endsWith('.why.json'));
    expect(dead).toHaveLength(1);
    expect(readFileSync(join(store.layout.dir('dead'), dead[0]!))).toEqual(receipt(1));
    const { why } = deadItem(store, `${key}.receipt.e1`);
    expect(why).toMatchObject({
      key,
      code: 'EGJ_EPOCH_SUPERSEDED',
      reason: 'receipt of epoch 1 superseded by epoch 2',
    });
  });

  it('leaves a standing receipt of the same epoch and its outputs alone, keeping the other one in dead/', async () => {
    const { store, key, stage, receipt } = setup();
    // a stolen lock let another delivery of epoch 1 commit first, with other bytes
    mkdirSync(store.layout.outDir(key));
    writeFileSync(join(store.layout.outDir(key), 'x.txt'), 'first');
    writeFileSync(
      store.layout.receipt(key),
      Buffer.from(`${JSON.stringify({ key, epoch: 1, other: true })}\n`),
    );
    const second = await commitResult(store, key, 1, receipt(1), stage('second'));
    expect(second).toEqual({ committed: false, reason: 'a receipt of epoch 1 is already committed' });
    expect(readFileSync(join(store.layout.outDir(key), 'x.txt'), 'utf8')).toBe('first');
    const dead = readdirSync(store.layout.dir('dead'));
    const raw = dead.find((n) => n.startsWith(`${key}.receipt.e1.`) && !n.endsWith('.why.json'))!;
    expect(readFileSync(join(store.layout.dir('dead'), raw))).toEqual(receipt(1));
    expect(JSON.parse(readFileSync(join(store.layout.dir('dead'), `${raw}.why.json`), 'utf8')).code).toBe(
      'EGJ_DUPLICATE_RECEIPT',
    );
    expect(readdirSync(store.layout.staging)).toEqual([]);
  });

  it('refuses an attempt whose lease is gone although its epoch is the newest and the job still running', async () => {
    const { store, key, stage, receipt } = setup();
    removeLease(store, key, 1);
    expect(await commitResult(store, key, 1, receipt(1), stage('one'))).toEqual({
      committed: false,
      reason:
        'lease lost: this attempt is epoch 1, the newest is 1, its lease was removed (reaped or cancelled)',
    });
    expect(readdirSync(store.layout.dir('receipts'))).toEqual([]);
    expect(deadItem(store, `${key}.receipt.e1`).why).toMatchObject({
      key,
      code: 'EGJ_EPOCH_SUPERSEDED',
      epoch: 1,
    });
  });

  it('refuses the leaseholder once a newer attempt is recorded, before that attempt has taken the lease over', async () => {
    const { store, key, stage, receipt } = setup();
    // another worker's beginAttempt, between recording epoch 2 and replacing the lease
    writeFileSync(store.layout.attempt(key, 2), JSON.stringify({ key, epoch: 2 }));
    expect(await commitResult(store, key, 1, receipt(1), stage('one'))).toEqual({
      committed: false,
      reason: 'lease lost: this attempt is epoch 1, the newest is 2',
    });
    expect(readdirSync(store.layout.dir('receipts'))).toEqual([]);
  });

  it('refuses an attempt whose job was reaped back to queue/, saying it is no longer running here', async () => {
    const { store, key, stage, receipt } = setup({ ttlS: 30 });
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(store.layout.lease(key), past, past);
    expect(await reapStale(store, 30)).toHaveLength(1);
    const refused = await commitResult(store, key, 1, receipt(1), stage('late'));
    expect(refused).toEqual({
      committed: false,
      reason:
        'lease lost: this attempt is epoch 1, the newest is 1, its lease was removed (reaped or cancelled) and the job is no longer running here',
    });
    expect(deadItem(store, `${key}.receipt.e1`).why).toMatchObject({ code: 'EGJ_EPOCH_SUPERSEDED' });
  });

  it('refuses without failing when the staging dir of the refused result is already gone', async () => {
    const { store, key, receipt } = setup({ attempts: 2 });
    const gone = join(store.layout.staging, '.extract-gone');
    expect(await commitResult(store, key, 1, receipt(1), gone)).toEqual({
      committed: false,
      reason: 'lease lost: this attempt is epoch 1, the newest is 2',
    });
    const standing = Buffer.from(`${JSON.stringify({ key, epoch: 2, other: true })}\n`);
    writeFileSync(store.layout.receipt(key), standing);
    expect(await commitResult(store, key, 2, receipt(2), gone)).toEqual({
      committed: false,
      reason: 'a receipt of epoch 2 is already committed',
    });
    expect(readFileSync(store.layout.receipt(key))).toEqual(standing);
  });

  it('keeps outputs an earlier attempt left without a receipt in dead/ as EGJ_OUT_REPLACED, then commits its own', async () => {
    const { store, key, stage, receipt } = setup();
    mkdirSync(store.layout.outDir(key));
    writeFileSync(join(store.layout.outDir(key), 'x.txt'), 'crashed before its receipt');
    expect(await commitResult(store, key, 1, receipt(1), stage('one'))).toEqual({ committed: true });
    expect(readFileSync(join(store.layout.outDir(key), 'x.txt'), 'utf8')).toBe('one');
    const { name, why } = deadItem(store, `${key}.out`);
    expect(readFileSync(join(store.layout.dir('dead'), name, 'x.txt'), 'utf8')).toBe(
      'crashed before its receipt',
    );
    expect(why).toMatchObject({
      key,
      code: 'EGJ_OUT_REPLACED',
      reason: 'outputs left by an earlier attempt without a committed receipt',
    });
  });

  it('moves the outputs in and fsyncs out/, then publishes the receipt, then moves the job to received/', async () => {
    const { store, key, stage, receipt } = setup();
    const staged = stage('one');
    const steps: string[] = [];
    const dirFds = new Map<number, string>();
    const recorded = hookedStore(store, (call, args, proceed) => {
      const out = proceed();
      const flags = Number(args[1]);
      if (call === 'openSync' && (flags & constants.O_DIRECTORY) !== 0)
        dirFds.set(out as number, String(args[0]));
      if (call === 'fsyncSync' && dirFds.has(args[0] as number))
        steps.push(`fsync ${dirFds.get(args[0] as number)}`);
      if (call === 'renameSync' || call === 'linkSync') steps.push(`${call} ${args[0]} ${args[1]}`);
      return out;
    });
    expect(await commitResult(recorded, key, 1, receipt(1), staged)).toEqual({ committed: true });
    const at = (step: string) => {
      expect(steps).toContain(step);
      return steps.indexOf(step);
    };
    const movedIn = at(`renameSync ${staged} ${store.layout.outDir(key)}`);
    const outSynced = at(`fsync ${store.layout.dir('out')}`);
    const stagingSynced = at(`fsync ${store.layout.staging}`);
    const receiptLinked = steps.findIndex(
      (s) => s.startsWith('linkSync') && s.endsWith(store.layout.receipt(key)),
    );
    const receiptSynced = at(`fsync ${store.layout.dir('receipts')}`);
    const received = at(
      `renameSync ${store.layout.jobFile('running', key)} ${store.layout.jobFile('received', key)}`,
    );
    expect(movedIn).toBeLessThan(outSynced);
    expect(movedIn).toBeLessThan(stagingSynced);
    expect(Math.max(outSynced, stagingSynced)).toBeLessThan(receiptLinked);
    expect(receiptLinked).toBeLessThan(receiptSynced);
    expect(receiptSynced).toBeLessThan(received);
  });

  it('finishes a commit whose identical receipt already landed (a retry after a crash before running → received)', async () => {
    const { store, key, stage, receipt } = setup();
    mkdirSync(store.layout.outDir(key));
    writeFileSync(join(store.layout.outDir(key), 'x.txt'), 'one');
    writeFileSync(store.layout.receipt(key), receipt(1));
    expect(await commitResult(store, key, 1, receipt(1), stage('one'))).toEqual({ committed: true });
    expect(readFileSync(store.layout.receipt(key))).toEqual(receipt(1));
    expect(readdirSync(store.layout.dir('received'))).toEqual([`${key}.json`]);
    expect(readdirSync(store.layout.dir('leases'))).toEqual([]);
    expect(readdirSync(store.layout.dir('dead')).filter((n) => n.includes('.receipt.'))).toEqual([]);
  });

  it('keeps a same-epoch receipt that lands while it commits, and dead-letters its own as EGJ_DUPLICATE_RECEIPT', async () => {
    const { store, key, stage, receipt } = setup();
    const theirs = Buffer.from(`${JSON.stringify({ key, epoch: 1, other: true })}\n`);
    // another delivery of epoch 1 (a stolen key lock) publishes its receipt just before ours
    let landed = false;
    const raced = hookedStore(store, (call, args, proceed) => {
      if (call === 'linkSync' && args[1] === store.layout.receipt(key) && !landed) {
        writeFileSync(store.layout.receipt(key), theirs);
        landed = true;
      }
      return proceed();
    });
    expect(await commitResult(raced, key, 1, receipt(1), stage('ours'))).toEqual({
      committed: false,
      reason: 'a receipt of epoch 1 is already committed',
    });
    expect(readFileSync(store.layout.receipt(key))).toEqual(theirs);
    const { name, why } = deadItem(store, `${key}.receipt.e1`);
    expect(readFileSync(join(store.layout.dir('dead'), name))).toEqual(receipt(1));
    expect(why).toMatchObject({
      key,
      code: 'EGJ_DUPLICATE_RECEIPT',
      reason: 'a receipt of epoch 1 is already committed',
      epoch: 1,
    });
    expect(readdirSync(store.layout.dir('running'))).toEqual([`${key}.json`]);
    expect(receivedEvents(store, key)).toEqual([]);
  });

  it('still reports the commit when the job left running/ just before its move: the receipt is the commit point', async () => {
    const { store, key, stage, receipt } = setup();
    const running = store.layout.jobFile('running', key);
    const moved = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === running)
        renameSync(running, store.layout.jobFile('received', key));
      return proceed();
    });
    expect(await commitResult(moved, key, 1, receipt(1), stage('one'))).toEqual({ committed: true });
    expect(readFileSync(store.layout.receipt(key))).toEqual(receipt(1));
    expect(readdirSync(store.layout.dir('leases'))).toEqual([]);
    expect(receivedEvents(store, key)).toHaveLength(1);
  });

  it('surfaces an I/O error moving the job to received/, after the receipt stands', async () => {
    const { store, key, stage, receipt } = setup();
    const running = store.layout.jobFile('running', key);
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === running) throw sysError('EIO', -5, 'rename');
      return proceed();
    });
    const err = await commitResult(failing, key, 1, receipt(1), stage('one')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(IoError);
    expect(errnoOf(err)).toBe('EIO');
    expect(readFileSync(store.layout.receipt(key))).toEqual(receipt(1));
    expect(readdirSync(store.layout.dir('running'))).toEqual([`${key}.json`]);
  });

  it('journals `received` with the key, epoch and facts when it commits, and nothing when it refuses', async () => {
    const { store, key, stage, receipt } = setup();
    await commitResult(store, key, 1, receipt(1), stage('one'), { destination: 'local' });
    const [event, ...more] = receivedEvents(store, key);
    expect(event).toMatchObject({ event: 'received', key, epoch: 1, destination: 'local' });
    expect(more).toEqual([]);
    expect((await commitResult(store, key, 1, receipt(1).subarray(1), stage('again'))).committed).toBe(false);
    expect(receivedEvents(store, key)).toHaveLength(1);
  });
});
