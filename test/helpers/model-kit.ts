// What the model tests share: a scratch directory on a RAM disk when there is one (removed after the
// file's tests), and the receipt a model commits for one job's epoch: canonical and unsigned, with fixed
// timings, its outputs the given files (path and text) digested as a generator host would.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { type Job, jobDigest } from '../../src/core/job.js';
import { RECEIPT_SCHEMA, type Receipt } from '../../src/core/receipt.js';
import { sha256Hex } from '../../src/core/sha256.js';

export function modelReceipt(
  job: Job,
  epoch: number,
  files: ReadonlyArray<{ path: string; text: string }>,
  extra: Partial<Receipt> = {},
): Buffer {
  const outputs = files.map((f) => {
    const bytes = Buffer.from(f.text);
    return { path: f.path, sha256: sha256Hex(bytes), bytes: bytes.length };
  });
  const r: Receipt = {
    schema: RECEIPT_SCHEMA,
    key: job.key,
    job_digest: jobDigest(job),
    epoch,
    status: 'ok',
    outputs,
    reason: null,
    worker: { id: 'model', host: 'model' },
    generator: { command: 'model', version: null },
    timings: { started_at: '2026-01-01T00:00:00Z', finished_at: '2026-01-01T00:00:00Z', generate_ms: 0 },
    cached: false,
    ...extra,
  };
  return canonicalBytes(r);
}

function existsDir(p: string): boolean {
  try {
    return readdirSync(p) !== undefined;
  } catch {
    return false;
  }
}

/** A fresh directory under /dev/shm (or the temp dir), removed after this file's tests. */
export function modelBase(prefix: string): string {
  const base = mkdtempSync(join(existsDir('/dev/shm') ? '/dev/shm' : tmpdir(), prefix));
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  return base;
}

/**
 * fast-check's options for a model run: a fixed seed by default, so CI explores the same cases every
 * run and a coverage assertion ("the interesting cases were exercised") cannot fail by chance;
 * GENJOB_MODEL_SEED=N replays another sample, GENJOB_MODEL_SEED=random draws a new one.
 */
export function modelRunOptions(numRuns: number): { numRuns: number; seed?: number } {
  const seed = process.env.GENJOB_MODEL_SEED ?? '20261202';
  return seed === 'random' ? { numRuns } : { numRuns, seed: Number(seed) };
}
