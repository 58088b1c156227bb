// Model-based property test of the run gate: shuffled event orders — claims, worker deaths (the lease stops
// beating and ages past its TTL), reaps, deliveries (late ones from a reaped, superseded epoch included),
// cancels, retries, checks and rechecks — run against the real store, worker commit, reap, gatherer
// and decision on one temp dir, with a model beside them. After every event the gate is evaluated:
// it never closes while a key without a receipt holds a live lease (the model says which leases are live,
// not the store), and a gate closed on one order reports the same verdict and count as every other
// closing, in any run, over the same set of committed records. A late delivery never changes the
// records. After a final drain the gate closes. fsync is a no-op here (speed).
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildJob, type Job } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { type CheckView, decideGate, type GatePolicy, type KeyRecords } from '../../src/run/gate-decision.js';
import { gatherRun } from '../../src/run/gate-gather.js';
import { buildGateRecord, evidenceDigest, evidenceOf, writeGate } from '../../src/run/gate-record.js';
import { buildManifest, sealManifest } from '../../src/run/run-manifest.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { cancelJob } from '../../src/store/cancel-job.js';
import { claim } from '../../src/store/claim.js';
import { readRecord } from '../../src/store/durable.js';
import { type FsPort, nodeFs } from '../../src/store/fs-port.js';
import { findJob } from '../../src/store/job-states.js';
import { mintJob } from '../../src/store/mint-job.js';
import { reapStale } from '../../src/store/reap.js';
import { retryJob } from '../../src/store/retry-job.js';
import { Store } from '../../src/store/store.js';
import { commitResult } from '../../src/worker/commit-result.js';
import { modelBase, modelReceipt, modelRunOptions } from '../helpers/model-kit.js';

const RUNS = Number(process.env.GENJOB_MODEL_RUNS ?? 300);
const TRUST = { trusted: [], requireSignature: false };
const W = { id: 'model', host: 'model-host', pid: 1 };
const FAST: FsPort = { ...nodeFs, fsyncSync: () => {} };
const TTL_S = 60;
const N = 3;
const RUN = { name: 'model', revision: 1, id: 'model' };

const original = (i: number) => `f${i} original\n`;
const JOBS: Job[] = Array.from({ length: N }, (_, i) =>
  buildJob(`job ${i}`, [{ path: `f${i}.txt`, sha256: sha256Hex(original(i)) }]),
);
const KEYS = JOBS.map((j) => j.key);
const content = (j: number, epoch: number) => `f${j} from epoch ${epoch}\n`;

type Cmd =
  | { t: 'claim'; job: number }
  | { t: 'die'; pick: number }
  | { t: 'reap' }
  | { t: 'deliver'; pick: number; ok: boolean }
  | { t: 'cancel'; job: number }
  | { t: 'retry'; job: number }
  | { t: 'check'; job: number; verdict: 'pass' | 'fail' | 'flaky' | 'error' };

interface Attempt {
  job: number;
  epoch: number;
  /** The worker still beats its lease (not dead, not done). */
  beating: boolean;
  done: boolean;
}

interface CheckRecord {
  receipt: string;
  digest: string;
  verdict: CheckView['verdict'];
}

const base = modelBase('genjob-gate-model-');

/** Every closing seen, in every run: the signature of its committed records → its verdict. */
const closings = new Map<string, string>();
const stats = { evaluations: 0, closed: 0, late: 0, collisions: 0 };
let runNo = 0;

class World {
  readonly root: string;
  readonly store: Store;
  readonly attempts: Attempt[] = [];
  readonly checks = new Map<string, CheckRecord[]>();
  staging = 0;
  checkNo = 0;

  constructor(readonly policy: GatePolicy) {
    runNo += 1;
    rmSync(join(base, `r${runNo - 1}`), { recursive: true, force: true });
    this.root = join(base, `r${runNo}`);
    mkdirSync(this.root, { recursive: true });
    for (let i = 0; i < N; i++) writeFileSync(join(this.root, `f${i}.txt`), original(i));
    this.store = new Store(this.root, FAST).ensure();
    for (const job of JOBS) mintJob(this.store, job);
    sealManifest(
      this.store,
      buildManifest(
        RUN,
        { instruction: 'job {path}', also: [], reads: [], each: null },
        KEYS.map((key, i) => ({ path: `f${i}.txt`, key })),
      ),
      randomBytes(32),
    );
  }

  receiptDigest(key: string): string | undefined {
    const bytes = readRecord(this.store, this.store.layout.receipt(key));
    return bytes === undefined ? undefined : sha256Hex(bytes);
  }

  async step(c: Cmd): Promise<void> {
    const { store } = this;
    switch (c.t) {
      case 'claim': {
        const key = KEYS[c.job]!;
        if (!claim(store, key, W.id)) return;
        const lease = beginAttempt(store, key, W, TTL_S, 'model');
        this.attempts.push({ job: c.job, epoch: lease.epoch, beating: true, done: false });
        return;
      }
      case 'die': {
        // the worker is killed (or frozen): its lease stops beating and, in time, ages past the TTL
        const live = this.attempts.filter((a) => a.beating);
        const a = live[c.pick % Math.max(1, live.length)];
        if (!a) return;
        a.beating = false;
        const past = new Date(Date.now() - 3_600_000);
        try {
          utimesSync(store.layout.lease(KEYS[a.job]!), past, past);
          utimesSync(store.layout.jobFile('running', KEYS[a.job]!), past, past);
        } catch {
          // the lease (or claim) is gone already: reaped, cancelled or committed
        }
        return;
      }
      case 'reap': {
        await reapStale(store, TTL_S);
        return;
      }
      case 'deliver': {
        const open = this.attempts.filter((a) => !a.done);
        const a = open[c.pick % Math.max(1, open.length)];
        if (!a) return;
        a.done = true;
        a.beating = false;
        const key = KEYS[a.job]!;
        const before = this.signature(await this.records());
        const outcome = await commitResult(
          store,
          key,
          a.epoch,
          this.receipt(a.job, a.epoch, c.ok),
          this.stage(a.job, a.epoch),
        );
        if (!outcome.committed) {
          // a late (superseded or cancelled) delivery: it changes no committed record
          stats.late += 1;
          expect(this.signature(await this.records())).toBe(before);
        }
        return;
      }
      case 'cancel': {
        const key = KEYS[c.job]!;
        const state = findJob(store, key)?.state;
        if (state !== 'queue' && state !== 'running') return;
        await cancelJob(store, key);
        for (const a of this.attempts) if (a.job === c.job) a.beating = false;
        return;
      }
      case 'retry': {
        const key = KEYS[c.job]!;
        if (findJob(store, key)?.state !== 'received') return;
        try {
          await retryJob(store, key);
        } catch (err) {
          if ((err as { code?: string }).code !== 'EGJ_NOT_RETRYABLE') throw err; // an ok receipt
        }
        return;
      }
      case 'check': {
        // a check (or a recheck: another record, the newest counts) of the key's receipt as it is now
        const key = KEYS[c.job]!;
        const receipt = this.receiptDigest(key);
        if (receipt === undefined) return;
        this.checkNo += 1;
        const list = this.checks.get(key) ?? [];
        list.push({
          receipt,
          digest: sha256Hex(`${key} ${receipt} ${c.verdict} ${list.length}`),
          verdict: c.verdict,
        });
        this.checks.set(key, list);
        return;
      }
    }
  }

  /** The checks plane as a reader: each checker's newest record, current while its receipt is today's. */
  readChecks = async (_root: string, key: string, checkers: readonly string[]): Promise<CheckView[]> => {
    const newest = this.checks.get(key)?.at(-1);
    const receipt = this.receiptDigest(key);
    return checkers.map((checker) =>
      newest === undefined
        ? { checker, verdict: 'missing', current: false }
        : {
            checker,
            verdict: newest.verdict,
            current: newest.receipt === receipt,
            recordDigest: newest.digest,
          },
    );
  };

  records(): Promise<KeyRecords[]> {
    return gatherRun(this.store, KEYS, {
      checkers: this.policy.requireChecks,
      readChecks: this.readChecks,
      trust: TRUST,
    });
  }

  /** The committed records the decision rests on, with dead letters by their code (names carry a clock). */
  signature(records: readonly KeyRecords[]): string {
    return JSON.stringify(
      records.map((r) => [
        r.current,
        r.outcome.kind === 'receipt'
          ? r.outcome.receiptDigest
          : r.outcome.kind === 'dead'
            ? r.outcome.code
            : r.outcome.kind,
        r.checks.map((c) => [c.checker, c.recordDigest ?? null, c.verdict, c.current]),
      ]),
    );
  }

  /** Evaluate the gate and check the two properties. Returns whether it closed. */
  async evaluate(): Promise<boolean> {
    stats.evaluations += 1;
    const records = await this.records();
    const decision = decideGate(records, this.policy);
    // the model's own view of live leases: an attempt still beating on a key that has no receipt
    const leased = this.attempts.some(
      (a) => a.beating && !a.done && findJob(this.store, KEYS[a.job]!)?.state === 'running',
    );
    if (leased) expect(decision.state, 'closed while a live lease is held').toBe('open');
    if (decision.state !== 'closed') return false;
    stats.closed += 1;
    const sig = `${JSON.stringify(this.policy)} ${this.signature(records)}`;
    const verdict = `${decision.met} ${decision.passed}/${decision.total}`;
    const seen = closings.get(sig);
    if (seen !== undefined) stats.collisions += 1;
    expect(seen ?? verdict, 'another verdict over the same committed records').toBe(verdict);
    closings.set(sig, verdict);
    // the gate record names exactly these records: the next evaluation over them writes nothing new
    const stored = writeGate(this.store, RUN, buildGateRecord(RUN, 'm', this.policy, decision, records));
    expect(stored.record.evidence_sha256).toBe(evidenceDigest(evidenceOf(records)));
    return true;
  }

  /** Finish like an operator: reap the dead, work and check what is left, until the gate closes. */
  async drain(): Promise<void> {
    for (const a of this.attempts)
      if (!a.done && a.beating)
        await this.step({ t: 'die', pick: this.attempts.filter((x) => x.beating).indexOf(a) });
    await this.step({ t: 'reap' });
    for (let j = 0; j < N; j++) {
      if (findJob(this.store, KEYS[j]!)?.state === 'queue') {
        await this.step({ t: 'claim', job: j });
        await this.step({ t: 'deliver', pick: this.attempts.filter((a) => !a.done).length - 1, ok: true });
      }
      const newest = this.checks.get(KEYS[j]!)?.at(-1);
      if (
        newest === undefined ||
        newest.receipt !== this.receiptDigest(KEYS[j]!) ||
        newest.verdict === 'error'
      )
        await this.step({ t: 'check', job: j, verdict: 'pass' });
    }
    expect(await this.evaluate(), 'the gate closes once every job is settled').toBe(true);
  }

  receipt(j: number, epoch: number, ok: boolean): Buffer {
    const files = ok ? [{ path: `f${j}.txt`, text: content(j, epoch) }] : [];
    return modelReceipt(JOBS[j]!, epoch, files, {
      worker: { id: W.id, host: W.host },
      ...(ok ? {} : { status: 'aborted', reason: 'generator exited with status 1' }),
    });
  }

  stage(j: number, epoch: number): string {
    this.staging += 1;
    const dir = join(this.store.layout.staging, `.extract-${this.staging}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${j}.txt`), content(j, epoch));
    return dir;
  }
}

const job = fc.integer({ min: 0, max: N - 1 });
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 5, arbitrary: job.map((j) => ({ t: 'claim' as const, job: j })) },
  { weight: 3, arbitrary: fc.nat(5).map((pick) => ({ t: 'die' as const, pick })) },
  { weight: 3, arbitrary: fc.constant({ t: 'reap' as const }) },
  {
    weight: 6,
    arbitrary: fc.record({ t: fc.constant('deliver' as const), pick: fc.nat(7), ok: fc.boolean() }),
  },
  { weight: 1, arbitrary: job.map((j) => ({ t: 'cancel' as const, job: j })) },
  { weight: 2, arbitrary: job.map((j) => ({ t: 'retry' as const, job: j })) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('check' as const),
      job,
      verdict: fc.constantFrom(
        'pass' as const,
        'pass' as const,
        'fail' as const,
        'flaky' as const,
        'error' as const,
      ),
    }),
  },
);
const policy: fc.Arbitrary<GatePolicy> = fc.record({
  requireChecks: fc.constantFrom([], ['tests']),
  minPass: fc.constantFrom({ num: 1, den: 1 }, { num: 3, den: 4 }, { num: 1, den: 2 }),
  maxFail: fc.constantFrom(null, 1),
  allowFlaky: fc.boolean(),
});

describe('the run gate against its model', () => {
  it(`never closes under a live lease and gives one verdict per set of committed records (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(policy, fc.array(cmd, { minLength: 10, maxLength: 60 }), async (p, cmds) => {
        const w = new World(p);
        for (const c of cmds) {
          await w.step(c);
          await w.evaluate();
        }
        await w.drain();
      }),
      modelRunOptions(RUNS),
    );
    console.log(
      `gate model: ${RUNS} runs, ${stats.evaluations} evaluations, ${stats.closed} closed, ${stats.collisions} on records another closing saw, ${stats.late} late deliveries refused`,
    );
    expect(stats.collisions).toBeGreaterThan(0);
  });
});
