// Stores for the report's tests, written straight to disk in the shapes `genjob mint` and `genjob work`
// leave (bench/fixtures.mjs), so a test of 200 jobs does not pay for 200 processes: each job changes one
// line of its own file src/m<i>.txt; its receipt can be patched (status, generator, time, usage).
import { readFileSync, writeFileSync } from 'node:fs';
import { canonical, makeJob, receivedJob, sha256 } from '../../bench/fixtures.mjs';
import type { CheckSource } from '../../src/report/check-source.js';
import type { ReportCheck, ReportJob, ReportReceipt } from '../../src/report/model.js';
import type { Store } from '../../src/store/store.js';
import { tempRepo } from '../helpers/temp-store.js';

export interface FixtureJob {
  key: string;
  path: string;
  before: string;
  after: string;
}

export function inputText(i: number): string {
  return Array.from({ length: 8 }, (_, n) => `line ${n + 1} of module ${i}`).join('\n') + '\n';
}

/** A repository with `n` received jobs; `receipt(i)` patches job i's receipt fields. */
export function fixtureRepo(
  n: number,
  o: {
    receipt?: (i: number) => Record<string, unknown>;
    instruction?: (i: number) => string;
    /** Job i's input (inputText(i) unless given). */
    before?: (i: number) => string;
    after?: (i: number) => string;
  } = {},
): { root: string; store: Store; jobs: FixtureJob[] } {
  const files: Record<string, string> = {};
  const inputOf = (i: number) => o.before?.(i) ?? inputText(i);
  for (let i = 0; i < n; i++) files[`src/m${i}.txt`] = inputOf(i);
  const { root, store } = tempRepo('genjob-report-', files);
  const jobs: FixtureJob[] = [];
  for (let i = 0; i < n; i++) {
    const path = `src/m${i}.txt`;
    const before = inputOf(i);
    const after = o.after?.(i) ?? before.replace(`line 4 of module ${i}`, `line 4 of module ${i}, changed`);
    const made = makeJob(o.instruction?.(i) ?? `Change line 4 of module ${i}`, [
      { path, sha256: sha256(before) },
    ]);
    const bytes = Buffer.from(after);
    receivedJob(root, made, [{ path, sha256: sha256(bytes), bytes: bytes.length }], (file) =>
      writeFileSync(file, bytes),
    );
    patchReceipt(store, made.key, {
      timings: {
        started_at: '2026-01-01T00:00:00.000Z',
        finished_at: '2026-01-01T00:00:01.000Z',
        generate_ms: 100 + i * 10,
      },
      ...o.receipt?.(i),
    });
    jobs.push({ key: made.key, path, before, after });
  }
  return { root, store, jobs };
}

export function patchReceipt(store: Store, key: string, fields: Record<string, unknown>): void {
  const file = store.layout.receipt(key);
  const doc = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, canonical({ ...doc, ...fields }));
}

/** A check source answering from a table (key → checks), with `checkers` declared. */
export function tableChecks(checkers: string[], table: Map<string, ReportCheck[]>): CheckSource {
  // the table is its own context: a report cache keeps no check of a table that changed since
  return {
    checkers,
    context: async () => sha256(JSON.stringify([...table])),
    filesOf: () => [],
    checksOf: async (key) => table.get(key) ?? [],
  };
}

export function check(
  checker: string,
  verdict: ReportCheck['verdict'],
  more: Partial<ReportCheck> = {},
): ReportCheck {
  const marks = { pass: '✓', fail: '✗', flaky: '✗✓', uncertain: '?', error: '!', missing: '' }[verdict];
  return {
    checker,
    verdict,
    current: true,
    marks,
    recordDigest: sha256(`${checker}${verdict}`),
    attempts: [],
    judge: [],
    spent: null,
    ...more,
  };
}

/** A received job of the model with nothing gathered (`key`'s character repeated), for the pure renderers' tests. */
export function modelJob(key: string, more: Partial<ReportJob> = {}): ReportJob {
  return {
    key: key.repeat(64).slice(0, 64),
    state: 'received',
    instruction: 'do it',
    inputs: [{ path: 'a.txt', sha256: null }],
    dead: null,
    epoch: 1,
    host: 'local',
    receipt: null,
    receiptProblem: null,
    files: [],
    checks: [],
    shadows: [],
    ...more,
  };
}

/** A receipt as the report model holds it: decoded, unsigned, no usage; `more` overrides any field. */
export function modelReceipt(more: Partial<ReportReceipt> = {}): ReportReceipt {
  return {
    digest: 'e'.repeat(64),
    status: 'ok',
    epoch: 1,
    reason: null,
    generator: 'g',
    generatorVersion: null,
    workerId: 'w',
    host: 'h',
    sandbox: 'bwrap',
    cached: false,
    batch: null,
    plane: 'live',
    startedAt: null,
    finishedAt: null,
    generateMs: 5,
    usage: null,
    signer: 'unsigned',
    signerTrusted: false,
    jobDigest: null,
    ...more,
  };
}
