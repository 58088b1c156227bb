// The job document: an immutable work order plus its identity.
// key    = sha256(canonical {instruction, inputs: {path: sha256|null}})  — what is asked
// digest = sha256(canonical job document)                                 — the whole contract
// Operational facts (attempts, workers, times) never enter the document, so retries keep the digest.
import { z } from 'zod';
import { canonicalBytes } from './canonical-json.js';
import { UsageError } from './errors.js';
import { ancestors, foldedPath, pathProblem } from './paths.js';
import { SHA256_HEX, sha256Hex } from './sha256.js';

export const JOB_SCHEMA = 'genjob/job@1';
export const MAX_INSTRUCTION_BYTES = 256 * 1024;
export const MAX_INPUTS = 10_000;

export const DEFAULT_CONSTRAINTS = {
  max_file_bytes: 64 * 1024 * 1024,
  max_total_bytes: 512 * 1024 * 1024,
} as const;

const sha = z.string().regex(SHA256_HEX, 'must be 64 lower-case hex digits');
const count = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

export const JobSchema = z.strictObject({
  schema: z.literal(JOB_SCHEMA),
  key: sha,
  instruction: z.string().min(1).max(MAX_INSTRUCTION_BYTES),
  /** The allowed paths: each with the sha256 of its bytes at mint, or null for a file to create. */
  inputs: z
    .array(z.strictObject({ path: z.string(), sha256: sha.nullable() }))
    .min(1)
    .max(MAX_INPUTS),
  /** Limits the returned outputs must respect (checked when a result is extracted). */
  constraints: z.strictObject({ max_file_bytes: count, max_total_bytes: count }),
});

export type Job = z.infer<typeof JobSchema>;
export type JobInput = Job['inputs'][number];

export class JobInvalidError extends UsageError {
  constructor(file: string, rule: string) {
    super('EGJ_JOB_INVALID', `${file}: not a valid job: ${rule}`);
  }
}

/** The idempotency key of a work order. Paths become keys of a null-prototype map, never of a plain object. */
export function workOrderKey(instruction: string, inputs: readonly JobInput[]): string {
  const map: Record<string, string | null> = Object.create(null);
  for (const input of inputs) map[input.path] = input.sha256;
  return sha256Hex(canonicalBytes({ instruction, inputs: map }));
}

export function jobDigest(job: Job): string {
  return sha256Hex(canonicalBytes(job));
}

/** Build a job from a work order: inputs sorted by path, contract rules checked. */
export function buildJob(
  instruction: string,
  inputs: readonly JobInput[],
  constraints = DEFAULT_CONSTRAINTS,
): Job {
  const sorted = [...inputs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const job: Job = {
    schema: JOB_SCHEMA,
    key: workOrderKey(instruction, sorted),
    instruction,
    inputs: sorted,
    constraints: { ...constraints },
  };
  const problem = contractProblem(job);
  if (problem) throw new UsageError('EGJ_BAD_PATH', problem);
  return job;
}

/** Why the paths of a job's contract are unusable, or null. */
export function contractProblem(job: Pick<Job, 'inputs'>): string | null {
  const seen = new Set<string>();
  const folded = new Map<string, string>();
  for (let i = 0; i < job.inputs.length; i++) {
    const p = job.inputs[i]!.path;
    const problem = pathProblem(p);
    if (problem) return `${JSON.stringify(p)}: ${problem}`;
    if (i > 0 && !(job.inputs[i - 1]!.path < p))
      return `inputs are not sorted by path or repeat ${JSON.stringify(p)}`;
    const twin = folded.get(foldedPath(p));
    if (twin !== undefined)
      return `${JSON.stringify(p)} and ${JSON.stringify(twin)} differ only in case or Unicode form`;
    folded.set(foldedPath(p), p);
    seen.add(p);
  }
  for (const p of seen) {
    for (const dir of ancestors(p)) {
      if (seen.has(dir))
        return `${JSON.stringify(dir)} is both a file and the directory of ${JSON.stringify(p)}`;
    }
  }
  return null;
}

/** Parse and check a job file's bytes; `file` names it in errors. Returns the job and its digest. */
export function parseJob(bytes: Uint8Array, file: string): { job: Job; digest: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (err) {
    throw new JobInvalidError(file, `malformed JSON (${(err as Error).message})`);
  }
  const parsed = JobSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new JobInvalidError(file, `${issue.path.join('.') || '(document)'}: ${issue.message}`);
  }
  const job = parsed.data;
  const problem = contractProblem(job);
  if (problem) throw new JobInvalidError(file, problem);
  if (workOrderKey(job.instruction, job.inputs) !== job.key) {
    throw new JobInvalidError(file, 'key is not the sha256 of its work order');
  }
  return { job, digest: jobDigest(job) };
}

export function allowedPaths(job: Job): Set<string> {
  return new Set(job.inputs.map((i) => i.path));
}
