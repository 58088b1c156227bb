// Model-based property test: shuffled event orders — mint, claim, crash (a crashing filesystem for the next
// operation), reap, deliver (a commit; late when its epoch was superseded, duplicate when delivered twice),
// apply, crash inside apply, re-apply — run against the real store, worker and apply functions on one temp
// dir, next to an in-memory model. After every command and after a final drain: no minted job lost or in
// two states, none applied twice, no receipt of a superseded epoch committed or applied, the repository
// equal to the model's. fsync is a no-op here (speed): durability itself is proven by the crash matrix.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyJob, recoverInterruptedApplies } from '../../src/apply/apply-job.js';
import { readApplied } from '../../src/apply/apply-records.js';
import { buildJob, type Job } from '../../src/core/job.js';
import { peekEpoch } from '../../src/core/receipt-peek.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { beginAttempt, currentEpoch } from '../../src/store/attempts.js';
import { claim } from '../../src/store/claim.js';
import { exists, moveState } from '../../src/store/durable.js';
import { type FsPort, nodeFs } from '../../src/store/fs-port.js';
import { readJournal } from '../../src/store/journal.js';
import { mintJob } from '../../src/store/mint-job.js';
import { reapStale } from '../../src/store/reap.js';
import { Store } from '../../src/store/store.js';
import { applyBacking, verifyKey } from '../../src/verify/verify-key.js';
import { commitResult } from '../../src/worker/commit-result.js';
import { crashingFs, isCrash } from '../helpers/crashing-fs.js';
import { modelBase, modelReceipt, modelRunOptions } from '../helpers/model-kit.js';

// 500 runs in the suite (its fixed seed draws the same ones each time); GENJOB_MODEL_RUNS=5000 for a deeper pass
const RUNS = Number(process.env.GENJOB_MODEL_RUNS ?? 500);
const POLICY = { trusted: [], requireSignature: false };
const W = { id: 'model', host: 'model', pid: 1 };
const FAST: FsPort = { ...nodeFs, fsyncSync: () => {} };

// three work orders: one updates a file, one creates a file, one updates two files
const ORIGINAL: Record<string, string> = { 'a.txt': 'a\n', 'b/c.txt': 'c\n', 'b/d.txt': 'd\n' };
const input = (p: string) => ({ path: p, sha256: p in ORIGINAL ? sha256Hex(ORIGINAL[p]!) : null });
const JOBS: Job[] = [['a.txt'], ['b/new.txt'], ['b/c.txt', 'b/d.txt']].map((paths, i) =>
  buildJob(`job ${i}`, paths.map(input)),
);
const content = (job: Job, path: string, epoch: number) => `${job.key.slice(0, 8)} ${path} epoch ${epoch}\n`;

type Cmd =
  | { t: 'mint'; job: number }
  | { t: 'claim'; job: number; crashAt?: number }
  | { t: 'deliver'; pick: number; crashAt?: number }
  | { t: 'reap'; crashAt?: number }
  | { t: 'apply'; job: number; crashAt?: number };

interface Attempt {
  job: number;
  epoch: number;
  delivered: boolean;
}

const base = modelBase('genjob-model-');

const stats = { deliveries: 0, refused: 0 };
let runNo = 0;
function freshRepo(): string {
  runNo += 1;
  const root = join(base, `r${runNo}`);
  rmSync(join(base, `r${runNo - 1}`), { recursive: true, force: true });
  mkdirSync(join(root, 'b'), { recursive: true });
  for (const [p, c] of Object.entries(ORIGINAL)) writeFileSync(join(root, p), c);
  return root;
}

/** The model and the system under test, one run. */
class World {
  readonly root = freshRepo();
  readonly store = new Store(this.root, FAST).ensure();
  readonly minted = new Set<number>();
  readonly attempts: Attempt[] = [];
  /** Per job: epochs whose commit was refused (late or duplicate), and the epoch that committed. */
  readonly refused = JOBS.map(() => new Set<number>());
  readonly committed: Array<number | undefined> = JOBS.map(() => undefined);
  staging = 0;

  storeFor(crashAt: number | undefined): Store {
    return crashAt === undefined ? this.store : new Store(this.root, crashingFs(FAST, crashAt));
  }

  async run(cmd: Cmd): Promise<void> {
    try {
      await this.step(cmd);
    } catch (err) {
      if (!isCrash(err)) throw err;
    }
  }

  async step(cmd: Cmd): Promise<void> {
    switch (cmd.t) {
      case 'mint': {
        mintJob(this.store, JOBS[cmd.job]!);
        this.minted.add(cmd.job);
        return;
      }
      case 'claim': {
        // what workOne does: claim, recover a receipt that landed before a crash, else a new attempt
        const s = this.storeFor(cmd.crashAt);
        const key = JOBS[cmd.job]!.key;
        if (!claim(s, key, W.id)) return;
        if (exists(s, s.layout.receipt(key)) && exists(s, s.layout.outDir(key))) {
          moveState(s, s.layout.jobFile('running', key), s.layout.jobFile('received', key));
          return;
        }
        const lease = beginAttempt(s, key, W, 60, 'model');
        this.attempts.push({ job: cmd.job, epoch: lease.epoch, delivered: false });
        return;
      }
      case 'deliver': {
        if (this.attempts.length === 0) return;
        const a = this.attempts[cmd.pick % this.attempts.length]!;
        const wasDelivered = a.delivered; // an earlier delivery of this attempt committed
        const job = JOBS[a.job]!;
        const s = this.storeFor(cmd.crashAt);
        stats.deliveries += 1;
        let outcome: Awaited<ReturnType<typeof commitResult>>;
        try {
          outcome = await commitResult(
            s,
            job.key,
            a.epoch,
            this.receipt(job, a.epoch),
            this.stage(job, a.epoch),
          );
        } catch (err) {
          // a crash after the receipt's exclusive create (the commit point) still committed
          const landed = exists(this.store, this.store.layout.receipt(job.key));
          if (landed && peekEpoch(readFileSync(this.store.layout.receipt(job.key))) === a.epoch) {
            this.committed[a.job] = a.epoch;
            a.delivered = true;
          }
          throw err;
        }
        if (outcome.committed) {
          // only the newest epoch commits; again only to finish its own commit cut short by a crash
          if (wasDelivered) expect(this.committed[a.job]).toBe(a.epoch);
          expect(this.refused[a.job]!.has(a.epoch)).toBe(false);
          this.committed[a.job] = a.epoch;
          a.delivered = true;
        } else {
          stats.refused += 1;
          // a duplicate of the delivery that committed is refused too; its epoch is not superseded
          if (this.committed[a.job] !== a.epoch) this.refused[a.job]!.add(a.epoch);
        }
        return;
      }
      case 'reap': {
        const s = this.storeFor(cmd.crashAt);
        const spin = Date.now();
        while (Date.now() - spin < 2) {
          // every lease and claim is now older than the 1 ms TTL: all "workers" are thought dead
        }
        await reapStale(s, 0.001);
        return;
      }
      case 'apply': {
        const job = JOBS[cmd.job]!;
        await recoverInterruptedApplies(this.store, { vouch: (k) => applyBacking(this.store, k, POLICY) });
        let v: Awaited<ReturnType<typeof verifyKey>>;
        try {
          v = await verifyKey(this.store, job.key, POLICY);
        } catch (err) {
          if (['EGJ_NOT_RECEIVED', 'EGJ_UNKNOWN_KEY'].includes((err as { code?: string }).code ?? '')) return;
          throw err;
        }
        expect(this.refused[cmd.job]!.has(v.receipt.epoch)).toBe(false);
        const s = this.storeFor(cmd.crashAt);
        await applyJob({
          store: s,
          job: v.job,
          jobDigest: v.jobDigest,
          receiptSha256: v.receiptSha256,
          epoch: v.receipt.epoch,
          outputs: v.receipt.outputs,
        });
        return;
      }
    }
  }

  receipt(job: Job, epoch: number): Buffer {
    return modelReceipt(
      job,
      epoch,
      job.inputs.map((i) => ({ path: i.path, text: content(job, i.path, epoch) })),
      { worker: { id: W.id, host: W.host } },
    );
  }

  /** A staging dir holding the generator's outputs for this epoch, as safeExtract leaves it. */
  stage(job: Job, epoch: number): string {
    this.staging += 1;
    const dir = join(this.store.layout.staging, `.extract-${this.staging}`);
    for (const i of job.inputs) {
      mkdirSync(join(dir, i.path, '..'), { recursive: true });
      writeFileSync(join(dir, i.path), content(job, i.path, epoch));
    }
    return dir;
  }

  /** The invariants that hold after every command, crash or not. */
  check(): void {
    const { store } = this;
    const inDir = (d: string) => new Set(readdirSync(store.layout.dir(d)).filter((n) => !n.startsWith('.')));
    const states = Object.fromEntries(['queue', 'running', 'received', 'applied'].map((s) => [s, inDir(s)]));
    const appliedEvents = readJournal(store).filter((e) => e.event === 'applied');
    for (let j = 0; j < JOBS.length; j++) {
      const job = JOBS[j]!;
      const f = `${job.key}.json`;
      const where = Object.keys(states).filter((s) => states[s]!.has(f));
      if (!this.minted.has(j)) {
        expect(where).toEqual([]);
        continue;
      }
      // never lost; in one state, except a received/ leftover beside applied/ (applied/ wins)
      expect(where.length, `${job.key.slice(0, 8)} in ${where}`).toBeGreaterThanOrEqual(1);
      if (where.length > 1) expect(where.sort()).toEqual(['applied', 'received']);
      // a committed receipt is never of a refused epoch
      if (exists(store, store.layout.receipt(job.key))) {
        expect(this.refused[j]!.has(peekEpoch(readFileSync(store.layout.receipt(job.key))))).toBe(false);
      }
      // applied at most once, with the bytes of the epoch that committed; otherwise the original bytes
      expect(appliedEvents.filter((e) => e.key === job.key).length).toBeLessThanOrEqual(1);
      const record = readApplied(store, job.key);
      const applying = exists(store, store.layout.applying(job.key));
      for (const i of job.inputs) {
        const now = readOrNull(join(this.root, i.path));
        if (record) {
          expect(this.refused[j]!.has(record.epoch)).toBe(false);
          expect(now).toBe(content(job, i.path, record.epoch));
        } else if (!applying) {
          expect(now).toBe(ORIGINAL[i.path] ?? null);
        }
      }
    }
  }

  /** Recover like an operator (reap, recover applies), then work and apply everything left. */
  async drain(): Promise<void> {
    await this.run({ t: 'reap' });
    await recoverInterruptedApplies(this.store, { vouch: (k) => applyBacking(this.store, k, POLICY) });
    for (let round = 0; round < 4; round++) {
      for (const j of this.minted) {
        const before = this.attempts.length;
        await this.step({ t: 'claim', job: j });
        if (this.attempts.length > before) await this.step({ t: 'deliver', pick: this.attempts.length - 1 });
        await this.step({ t: 'apply', job: j });
      }
    }
  }
}

function readOrNull(p: string): string | null {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return null;
  }
}

const job = fc.integer({ min: 0, max: JOBS.length - 1 });
// a quarter of the operations crash, at any of their first 24 mutating filesystem calls
const crash = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 24 }) },
);
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 3, arbitrary: job.map((j) => ({ t: 'mint' as const, job: j })) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('claim' as const), job, crashAt: crash }) },
  {
    weight: 5,
    arbitrary: fc.record({ t: fc.constant('deliver' as const), pick: fc.nat(7), crashAt: crash }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('reap' as const), crashAt: crash }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('apply' as const), job, crashAt: crash }) },
);

describe('the store against its model', () => {
  it(`loses no job, applies none twice and never applies a superseded epoch (${RUNS} runs)`, async () => {
    let commands = 0;
    let crashes = 0;
    let late = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 16 }), async (cmds) => {
        const w = new World();
        for (const c of cmds) {
          commands += 1;
          if ('crashAt' in c && c.crashAt !== undefined) crashes += 1;
          await w.run(c);
          w.check();
        }
        await w.drain();
        w.check();
        // after the drain every minted job is applied, with the bytes of its committed epoch
        for (const j of w.minted) {
          const record = readApplied(w.store, JOBS[j]!.key);
          expect(record, `job ${j} not applied after the drain`).toBeDefined();
          expect(record!.epoch).toBe(currentEpoch(w.store, JOBS[j]!.key));
        }
        late += w.refused.reduce((n, s) => n + s.size, 0);
      }),
      modelRunOptions(RUNS),
    );
    console.log(
      `model: ${RUNS} runs, ${commands} commands, ${crashes} with an injected crash, ${stats.deliveries} deliveries, ` +
        `${stats.refused} refused (late or duplicate), ${late} superseded epochs never committed`,
    );
  });
});
