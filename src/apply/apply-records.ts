// The two apply records in .gen/ (canonical JSON, published by exclusive create, never edited):
//   applying/<key>.json  genjob/applying@1  the write-ahead intent, published before the tree is touched
//   applied/<key>.json   genjob/applied@1   the outcome; it embeds the job document (the job leaves received/)
// The applying record also embeds the job, so a crash can be finished from .gen/ alone.
import * as z from 'zod/mini';
import { UsageError } from '../core/errors.js';
import { type Job, jobDigest, workOrderKey } from '../core/job.js';
import { JobSchema } from '../core/job-schema.js';
import { ancestors, pathProblem } from '../core/paths.js';
import { checkSchema, issueText } from '../core/schema-check.js';
import { SHA256_HEX } from '../core/sha256.js';
import { readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { type Write, withExecutableBits } from './apply-plan.js';

export const APPLYING_SCHEMA = 'genjob/applying@1';
export const APPLIED_SCHEMA = 'genjob/applied@1';

const sha = z.string().check(z.regex(SHA256_HEX));
const WriteSchema = z.object({
  path: z.string(),
  before: z.nullable(sha),
  after: sha,
  mode: z.number().check(z.int(), z.minimum(0), z.maximum(0o777)),
  before_mode: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(0o777))),
});
const common = {
  key: sha,
  job_digest: sha,
  receipt_sha256: sha,
  epoch: z.number().check(z.int(), z.nonnegative()),
  writes: z.array(WriteSchema),
  created_dirs: z.optional(z.array(z.string())),
  job: JobSchema,
};
const ApplyingSchema = z.object({ schema: z.literal(APPLYING_SCHEMA), ...common });
const AppliedSchema = z.object({ schema: z.literal(APPLIED_SCHEMA), ...common, applied_at: z.string() });

export interface ApplyingRecord {
  schema: typeof APPLYING_SCHEMA;
  key: string;
  job_digest: string;
  receipt_sha256: string;
  epoch: number;
  writes: Write[];
  /**
   * The directories the apply makes for the files it creates (absent when it was planned), shallowest
   * first; revert removes each again while it is empty. Omitted when there are none.
   */
  created_dirs?: string[];
  job: Job;
}
export interface AppliedRecord extends Omit<ApplyingRecord, 'schema'> {
  schema: typeof APPLIED_SCHEMA;
  applied_at: string;
}

function invalid(file: string, rule: string): UsageError {
  return new UsageError('EGJ_RECORD_INVALID', `${file}: not a valid apply record: ${rule}`);
}

function read<T extends ApplyingRecord | AppliedRecord>(
  store: Store,
  file: string,
  key: string,
  schema: z.ZodMiniType<T>,
): T | undefined {
  const bytes = readIfExists(store, file);
  if (bytes === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw invalid(file, `malformed JSON (${(err as Error).message})`);
  }
  const parsed = checkSchema(schema, raw);
  if (!parsed.ok) throw invalid(file, issueText(parsed.issue));
  const record = parsed.data;
  if (record.key !== key || record.job.key !== key) throw invalid(file, `it is not the record of key ${key}`);
  if (jobDigest(record.job) !== record.job_digest)
    throw invalid(file, 'job_digest is not the digest of its job');
  const { instruction, inputs, reads } = record.job;
  if (workOrderKey(instruction, inputs, reads) !== key)
    throw invalid(file, "its job's key is not the sha256 of its work order");
  // What an apply plans (apply-plan.ts), so what a record committed on a branch can say is bounded by the
  // job the user names: revert and recovery restore only the bytes the job was minted from, at its paths.
  const minted = new Map(inputs.map((i) => [i.path, i.sha256]));
  const seen = new Set<string>();
  for (const w of record.writes) {
    const at = `write ${JSON.stringify(w.path)}`;
    const problem = pathProblem(w.path);
    if (problem) throw invalid(file, `${at}: ${problem}`);
    if (!minted.has(w.path)) throw invalid(file, `${at}: not one of its job's allowed paths`);
    if (seen.has(w.path)) throw invalid(file, `${at}: listed twice`);
    seen.add(w.path);
    if (w.before !== minted.get(w.path))
      throw invalid(file, `${at}: "before" is not the digest its job was minted with`);
    if (w.before_mode !== undefined && withExecutableBits(w.before_mode) !== w.mode)
      throw invalid(file, `${at}: "before_mode" differs from "mode" in more than the executable bits`);
  }
  // revert removes these (only while empty): each must be a directory of a file the apply creates
  const made = new Set(record.writes.flatMap((w) => (w.before === null ? ancestors(w.path) : [])));
  const dirs = new Set<string>();
  for (const d of record.created_dirs ?? []) {
    const at = `created directory ${JSON.stringify(d)}`;
    if (!made.has(d)) throw invalid(file, `${at}: not a directory of a file its job creates`);
    if (dirs.has(d)) throw invalid(file, `${at}: listed twice`);
    dirs.add(d);
  }
  return record;
}

export function readApplying(store: Store, key: string): ApplyingRecord | undefined {
  return read(store, store.layout.applying(key), key, ApplyingSchema as z.ZodMiniType<ApplyingRecord>);
}

export function readApplied(store: Store, key: string): AppliedRecord | undefined {
  return read(
    store,
    store.layout.jobFile('applied', key),
    key,
    AppliedSchema as z.ZodMiniType<AppliedRecord>,
  );
}

/** The apply record of a reverted job: applied/<key>.json as revert renamed it to reverted/<key>.json. */
export function readReverted(store: Store, key: string): AppliedRecord | undefined {
  return read(
    store,
    store.layout.jobFile('reverted', key),
    key,
    AppliedSchema as z.ZodMiniType<AppliedRecord>,
  );
}
