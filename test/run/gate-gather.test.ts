import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { buildJob, type Job } from '../../src/core/job.js';
import type { Receipt } from '../../src/core/receipt.js';
import { NO_TRUST } from '../../src/core/receipt-envelope.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { decideGate } from '../../src/run/gate-decision.js';
import { gatherRun } from '../../src/run/gate-gather.js';
import { buildGateRecord } from '../../src/run/gate-record.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { publishExclusive, replaceFile } from '../../src/store/durable.js';
import type { FsPort } from '../../src/store/fs-port.js';
import { nodeFs } from '../../src/store/fs-port.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import { Store } from '../../src/store/store.js';
import { modelReceipt } from '../helpers/model-kit.js';

// The gate reads each key's job file and receipt once and hands them to verification: these tests make
// sure that what it counts is still every check on the bytes on disk, whatever was changed since work.
let root: string;
let store: Store;
const NEW = 'new output\n';
const jobs = [0, 1, 2].map((i) => buildJob(`job ${i}`, [{ path: `f/${i}.txt`, sha256: sha256Hex('old\n') }]));

/** The receipt work leaves for `job`: its one output holding NEW, at epoch 1. */
const receiptOf = (job: Job, over: Partial<Receipt> = {}) =>
  modelReceipt(job, 1, [{ path: job.inputs[0]!.path, text: NEW }], over);

const victim = jobs[1]!;
const writeReceipt = (job: Job, over: Partial<Receipt>) =>
  replaceFile(store, store.layout.receipt(job.key), receiptOf(job, over));
const out = (job: Job) => join(store.layout.outDir(job.key), job.inputs[0]!.path);

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'gj-gather-'));
  store = new Store(root).ensure();
  for (const job of jobs) {
    publishExclusive(store, store.layout.jobFile('received', job.key), jobFileBytes(job));
    beginAttempt(store, job.key, { id: 'w', host: 'h', pid: 1 }, 60, 'local');
    publishExclusive(store, store.layout.receipt(job.key), receiptOf(job));
    mkdirSync(join(store.layout.outDir(job.key), 'f'), { recursive: true });
    writeFileSync(out(job), NEW);
  }
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const gather = (s: Store = store) =>
  gatherRun(
    s,
    jobs.map((j) => j.key),
    { checkers: [], trust: NO_TRUST },
  );

function problemOf(records: Awaited<ReturnType<typeof gather>>, job: Job): string | null {
  const o = records.find((r) => r.key === job.key)!.outcome;
  if (o.kind !== 'receipt') throw new Error(`no receipt outcome: ${o.kind}`);
  return o.problem;
}

describe('gatherRun', () => {
  it('verifies every ok receipt and records the digest of the receipt bytes it verified', async () => {
    const records = await gather();
    for (const [i, job] of jobs.entries()) {
      expect(records[i]!.outcome).toEqual({
        kind: 'receipt',
        status: 'ok',
        receiptDigest: sha256Hex(receiptOf(job)),
        problem: null,
      });
    }
  });

  it.each([
    {
      attack: 'tampered output bytes of the same size',
      act: () => writeFileSync(out(victim), 'evil output'.padEnd(NEW.length, '\n')),
      code: 'EGJ_ARTIFACT_DRIFT',
    },
    {
      attack: 'an output padded past the size its receipt claims',
      act: () => appendFileSync(out(victim), 'evil tail\n'),
      code: 'EGJ_ARTIFACT_DRIFT',
    },
    {
      attack: 'an output cut short of the size its receipt claims',
      act: () => truncateSync(out(victim), 3),
      code: 'EGJ_ARTIFACT_DRIFT',
    },
    {
      attack: 'an output that grew a sibling the receipt does not name',
      act: () => writeFileSync(join(store.layout.outDir(victim.key), 'f', 'evil.sh'), 'x'),
      code: 'EGJ_ARTIFACT_EXTRA',
    },
    {
      attack: 'a job file edited after work (its key no longer its work order)',
      act: () =>
        writeFileSync(
          store.layout.jobFile('received', victim.key),
          jobFileBytes({ ...victim, instruction: 'evil instruction' }),
        ),
      code: 'EGJ_JOB_INVALID',
    },
    {
      attack: 'a job file swapped for another valid job (the receipt names other job bytes)',
      act: () =>
        writeFileSync(
          store.layout.jobFile('received', victim.key),
          jobFileBytes({ ...victim, constraints: { ...victim.constraints, max_file_bytes: 7 } }),
        ),
      code: 'EGJ_DIGEST_MISMATCH',
    },
    {
      attack: 'a receipt of an epoch a newer attempt superseded',
      act: () => beginAttempt(store, victim.key, { id: 'w2', host: 'h', pid: 2 }, 60, 'local'),
      code: 'EGJ_EPOCH_SUPERSEDED',
    },
    {
      attack: 'a receipt forged onto a shadow plane',
      act: () => writeReceipt(victim, { plane: 'shadow:trial' }),
      code: 'EGJ_SHADOW',
    },
    {
      attack: 'a receipt with a forged output digest',
      act: () =>
        writeReceipt(victim, {
          outputs: [{ path: victim.inputs[0]!.path, sha256: sha256Hex('evil\n'), bytes: NEW.length }],
        }),
      code: 'EGJ_ARTIFACT_DRIFT',
    },
  ])('counts $attack as failed ($code), and only that key', async ({ act, code }) => {
    act();
    const records = await gather();
    expect(problemOf(records, victim)).toMatch(new RegExp(`^${code}: `));
    for (const job of jobs.filter((j) => j !== victim)) expect(problemOf(records, job)).toBeNull();
  });

  it('finds a job that moves between two state directories while they are listed, never its old dead letter', async () => {
    // the victim was cancelled once (its dead letter stays) and retried; now it is running, and its
    // worker commits it (running → received) right after received/ was listed, before running/
    const { deadLetterBytes } = await import('../../src/store/dead-letter.js');
    deadLetterBytes(store, `${victim.key}.job`, jobFileBytes(victim), {
      key: victim.key,
      code: 'EGJ_CANCELLED',
      reason: 'cancelled',
    });
    const received = store.layout.jobFile('received', victim.key);
    const running = store.layout.jobFile('running', victim.key);
    renameSync(received, running);
    let moved = false;
    const racing: FsPort = {
      ...nodeFs,
      readdirSync: ((path: string, o?: unknown) => {
        const names = nodeFs.readdirSync(path, o as never);
        if (!moved && path === store.layout.dir('received')) {
          moved = true;
          renameSync(running, received);
        }
        return names;
      }) as FsPort['readdirSync'],
    };
    const records = await gather(new Store(root, racing));
    expect(moved).toBe(true);
    const outcome = records.find((r) => r.key === victim.key)!.outcome;
    expect(outcome).toMatchObject({ kind: 'receipt', status: 'ok', problem: null });
  });

  it('forged: a dead letter whose code holds a lone surrogate or a megabyte of text still makes a gate record', async () => {
    // a branch commits dead letters under .gen/dead/: JSON's "\ud800" has no canonical form
    const { deadLetterBytes } = await import('../../src/store/dead-letter.js');
    for (const [job, code] of [
      [jobs[0]!, 'EGJ_CANCELLED\ud800'],
      [jobs[1]!, 'x'.repeat(1 << 20)],
    ] as const) {
      rmSync(store.layout.receipt(job.key));
      rmSync(store.layout.jobFile('received', job.key));
      rmSync(store.layout.lease(job.key), { force: true });
      deadLetterBytes(store, `${job.key}.job`, jobFileBytes(job), { key: job.key, code, reason: 'forged' });
    }
    const records = await gather();
    const policy = { requireChecks: [], minPass: { num: 0, den: 1 }, maxFail: null, allowFlaky: false };
    const decision = decideGate(records, policy);
    if (decision.state !== 'closed') throw new Error('open');
    const record = buildGateRecord(
      { name: 'r', revision: 1, id: 'r' },
      'm'.repeat(64),
      policy,
      decision,
      records,
    );
    expect(() => canonicalBytes(record)).not.toThrow();
    expect(record.keys.map((k) => k.why)).toEqual([
      'dead: EGJ_CANCELLED\ufffd',
      `dead: ${'x'.repeat(200)}…`,
      undefined,
    ]);
  });

  it('forged: a lease a branch commits for a dead job with a TTL no worker can set holds nothing open', async () => {
    const { deadLetterBytes } = await import('../../src/store/dead-letter.js');
    rmSync(store.layout.receipt(victim.key));
    rmSync(store.layout.jobFile('received', victim.key));
    deadLetterBytes(store, `${victim.key}.job`, jobFileBytes(victim), {
      key: victim.key,
      code: 'EGJ_CANCELLED',
      reason: 'cancelled',
    });
    const lease = (ttl_s: number) =>
      replaceFile(
        store,
        store.layout.lease(victim.key),
        Buffer.from(
          JSON.stringify({
            key: victim.key,
            epoch: 1,
            worker: { id: 'far:1:a', host: 'far-away', pid: 1, start: 1 },
            ttl_s,
            claimed_at: new Date().toISOString(),
            destination: 'local',
          }),
        ),
      );
    const live = async () => (await gather()).find((r) => r.key === victim.key)!.liveLease;
    // a worker's own lease, within the longest TTL work can set (a week): the gate waits for it
    lease(7 * 24 * 3600);
    expect(await live()).toBe(true);
    // a TTL past that (or none a number can be) is no worker's: it would hold the gate open for good
    for (const ttl of [7 * 24 * 3600 + 1, 1e12, Number.POSITIVE_INFINITY]) {
      lease(ttl);
      expect(await live()).toBe(false);
    }
  });

  it('reads each job file and receipt once per key', async () => {
    const opened: string[] = [];
    const counting: FsPort = {
      ...nodeFs,
      openSync: (path, flags, mode) => {
        opened.push(String(path));
        return nodeFs.openSync(path, flags, mode);
      },
    };
    const records = await gather(new Store(root, counting));
    expect(records.every((r) => r.outcome.kind === 'receipt' && r.outcome.problem === null)).toBe(true);
    for (const job of jobs) {
      expect(opened.filter((p) => p === store.layout.jobFile('received', job.key))).toHaveLength(1);
      expect(opened.filter((p) => p === store.layout.receipt(job.key))).toHaveLength(1);
    }
  });
});
