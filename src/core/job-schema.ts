// Parsing a job file: JSON → schema (zod/mini) → contract rules → key check. Kept apart from job.ts
// so that minting, which only builds jobs, never loads the schema library.
import * as z from 'zod/mini';
import {
  contractProblem,
  instructionProblem,
  JOB_SCHEMA,
  type Job,
  JobInvalidError,
  jobDigest,
  MAX_INPUTS,
  MAX_INSTRUCTION_BYTES,
  workOrderKey,
} from './job.js';
import { checkSchema, issueText } from './schema-check.js';
import { SHA256_HEX } from './sha256.js';

const sha = z.string().check(z.regex(SHA256_HEX, 'must be 64 lower-case hex digits'));
const count = z.number().check(z.int(), z.positive(), z.maximum(Number.MAX_SAFE_INTEGER));

export const JobSchema = z.strictObject({
  schema: z.literal(JOB_SCHEMA),
  key: sha,
  instruction: z.string().check(
    z.minLength(1),
    z.refine((s) => s.length === 0 || instructionProblem(s) === null, {
      message: `must be at most ${MAX_INSTRUCTION_BYTES} bytes of UTF-8 with no NUL (a generator gets it in its environment)`,
    }),
  ),
  inputs: z
    .array(z.strictObject({ path: z.string(), sha256: z.nullable(sha) }))
    .check(z.minLength(1), z.maxLength(MAX_INPUTS)),
  // absent when there are none, never empty: one work order has one document
  reads: z.optional(
    z.array(z.strictObject({ path: z.string(), sha256: sha })).check(z.minLength(1), z.maxLength(MAX_INPUTS)),
  ),
  constraints: z.strictObject({ max_file_bytes: count, max_total_bytes: count }),
}) satisfies z.ZodMiniType<Job>;

/** Parse and check a job file's bytes; `file` names it in errors. Returns the job and its digest. */
export function parseJob(bytes: Uint8Array, file: string): { job: Job; digest: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (err) {
    throw new JobInvalidError(file, `malformed JSON (${(err as Error).message})`);
  }
  const parsed = checkSchema(JobSchema, raw);
  if (!parsed.ok) throw new JobInvalidError(file, issueText(parsed.issue));
  const job = parsed.data;
  const problem = contractProblem(job);
  if (problem) throw new JobInvalidError(file, problem);
  if (workOrderKey(job.instruction, job.inputs, job.reads) !== job.key) {
    throw new JobInvalidError(file, 'key is not the sha256 of its work order');
  }
  return { job, digest: jobDigest(job) };
}
