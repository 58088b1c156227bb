// The job document: an immutable work order plus its identity.
// key    = sha256(canonical {instruction, inputs: {path: sha256|null}})  — what is asked
// digest = sha256(canonical job document)                                 — the whole contract
// Operational facts (attempts, workers, times) never enter the document, so retries keep the digest.
// No zod here: minting must not pay for the schema library (see job-schema.ts for parsing).
import { canonicalBytes } from './canonical-json.js';
import { UsageError } from './errors.js';
import { ancestors, foldedPath, pathProblem } from './paths.js';
import { sha256Hex } from './sha256.js';

export const JOB_SCHEMA = 'genjob/job@1';
export const MAX_INSTRUCTION_BYTES = 256 * 1024;
export const MAX_INPUTS = 10_000;

export const DEFAULT_CONSTRAINTS = {
  max_file_bytes: 64 * 1024 * 1024,
  max_total_bytes: 512 * 1024 * 1024,
} as const;

/** One allowed path: the sha256 of its bytes at mint, or null for a file the generator is to create. */
export interface JobInput {
  path: string;
  sha256: string | null;
}

/** The job document (schema checked by parseJob in job-schema.ts, which loads zod only where parsing happens). */
export interface Job {
  schema: typeof JOB_SCHEMA;
  key: string;
  instruction: string;
  inputs: JobInput[];
  /** Limits the returned outputs must respect (checked when a result is extracted). */
  constraints: { max_file_bytes: number; max_total_bytes: number };
}

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
  // Stryker disable next-line EqualityOperator,ConditionalExpression: V8's sort reads only compare < 0, and equal paths are refused as a repeat next, so the other answers never show
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

export function allowedPaths(job: Job): Set<string> {
  return new Set(job.inputs.map((i) => i.path));
}
