// The job document: an immutable work order plus its identity.
// key    = sha256(canonical {instruction, inputs: {path: sha256|null}[, reads: {path: sha256}]})  — what is asked
// digest = sha256(canonical job document)                                                    — the whole contract
// `reads` (files shipped for context, never outputs) enters the key and the document only when there
// are some, so every job minted without them keeps its key and digest. Operational facts (attempts,
// workers, times) never enter the document, so retries keep the digest.
// No zod here: minting must not pay for the schema library (see job-schema.ts for parsing).
import { canonicalJson } from './canonical-json.js';
import { UsageError } from './errors.js';
import { ancestors, foldedPath, pathProblem } from './paths.js';
import { sha256Hex } from './sha256.js';

export const JOB_SCHEMA = 'genjob/job@1';
/**
 * The longest instruction, in bytes of UTF-8. A generator is given it in its environment
 * (`GENJOB_INSTRUCTION=…`), and Linux starts no program with one string of its environment or arguments
 * longer than 128 KiB, its NUL included (MAX_ARG_STRLEN): a longer instruction could never reach one.
 */
export const MAX_INSTRUCTION_BYTES = 128 * 1024 - 'GENJOB_INSTRUCTION='.length - 1;
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

/** A file shipped to the generator for context only: hashed into the key, never an output. */
export interface JobRead {
  path: string;
  sha256: string;
}

/** The job document (schema checked by parseJob in job-schema.ts, which loads zod only where parsing happens). */
export interface Job {
  schema: typeof JOB_SCHEMA;
  key: string;
  instruction: string;
  inputs: JobInput[];
  /** Files shipped for context that the generator may not change; absent (never empty) when there are none. */
  reads?: JobRead[];
  /** Limits the returned outputs must respect (checked when a result is extracted). */
  constraints: { max_file_bytes: number; max_total_bytes: number };
}

export class JobInvalidError extends UsageError {
  constructor(file: string, rule: string) {
    super('EGJ_JOB_INVALID', `${file}: not a valid job: ${rule}`);
  }
}

/** Paths as keys of a null-prototype map, never of a plain object (a path may be `__proto__`). */
function digestMap(
  files: ReadonlyArray<{ path: string; sha256: string | null }>,
): Record<string, string | null> {
  const map: Record<string, string | null> = Object.create(null);
  for (const f of files) map[f.path] = f.sha256;
  return map;
}

/** The idempotency key of a work order; `reads` joins it only when there are some. */
export function workOrderKey(
  instruction: string,
  inputs: readonly JobInput[],
  reads: readonly JobRead[] = [],
): string {
  const order = { instruction, inputs: digestMap(inputs) };
  return sha256Hex(canonicalJson(reads.length > 0 ? { ...order, reads: digestMap(reads) } : order));
}

export function jobDigest(job: Job): string {
  return sha256Hex(canonicalJson(job));
}

function byPath<T extends { path: string }>(files: readonly T[]): T[] {
  // Stryker disable next-line EqualityOperator,ConditionalExpression: V8's sort reads only compare < 0, and equal paths are refused as a repeat next, so the other answers never show
  return [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Build a job from a work order: inputs (and reads) sorted by path, contract rules checked. */
export function buildJob(
  instruction: string,
  inputs: readonly JobInput[],
  constraints = DEFAULT_CONSTRAINTS,
  reads: readonly JobRead[] = [],
): Job {
  const sorted = byPath(inputs);
  const sortedReads = byPath(reads);
  const job: Job = {
    schema: JOB_SCHEMA,
    key: workOrderKey(instruction, sorted, sortedReads),
    instruction,
    inputs: sorted,
    ...(sortedReads.length > 0 ? { reads: sortedReads } : {}),
    constraints: { ...constraints },
  };
  const long = instructionProblem(instruction) ?? countProblem(job);
  if (long) throw new UsageError('EGJ_BAD_INPUT', long);
  const problem = contractProblem(job);
  if (problem) throw new UsageError('EGJ_BAD_PATH', problem);
  return job;
}

/**
 * Why `instruction` cannot be a job's, or null: empty, holding a NUL (no environment variable can carry
 * one: a file saved as UTF-16 has one in every other byte), or longer than a generator can be given.
 */
export function instructionProblem(instruction: string): string | null {
  if (instruction.length === 0) return 'the instruction is empty';
  const nul = instruction.indexOf('\0');
  if (nul !== -1)
    return `the instruction holds a NUL character (character ${nul + 1}), which a generator's environment cannot carry: save it as UTF-8 text`;
  // a string's UTF-8 bytes are at most three per UTF-16 code unit: most instructions are decided unmeasured
  if (instruction.length * 3 <= MAX_INSTRUCTION_BYTES) return null;
  const bytes = Buffer.byteLength(instruction, 'utf8');
  if (bytes <= MAX_INSTRUCTION_BYTES) return null;
  return `the instruction is ${bytes.toLocaleString('en')} bytes of UTF-8, more than the ${MAX_INSTRUCTION_BYTES.toLocaleString('en')} a generator can be given (it gets the instruction in its environment, as GENJOB_INSTRUCTION): put the long part in a file and pass it with --read FILE`;
}

/** More allowed paths or read files than a job file may hold (it would be minted, and never valid). */
function countProblem(job: Pick<Job, 'inputs' | 'reads'>): string | null {
  for (const [name, list] of [
    ['allowed paths', job.inputs],
    ['read files', job.reads ?? []],
  ] as const)
    if (list.length > MAX_INPUTS)
      return `${list.length.toLocaleString('en')} ${name}, more than the ${MAX_INPUTS.toLocaleString('en')} a job may have: split the work into several jobs (mint --each makes one per file)`;
  return null;
}

/** Why the paths of a job's contract (its inputs, then its reads) are unusable, or null. */
export function contractProblem(job: Pick<Job, 'inputs' | 'reads'>): string | null {
  const folded = new Map<string, string>();
  const problem =
    listProblem(job.inputs, 'inputs', folded) ?? (job.reads ? listProblem(job.reads, 'reads', folded) : null);
  if (problem) return problem;
  const seen = new Set(folded.values());
  for (const p of seen) {
    for (const dir of ancestors(p)) {
      if (seen.has(dir))
        return `${JSON.stringify(dir)} is both a file and the directory of ${JSON.stringify(p)}`;
    }
  }
  return null;
}

/** One list's paths: each valid, in order, and no twin of a path seen before (in `folded`, which it fills). */
function listProblem(
  list: ReadonlyArray<{ path: string }>,
  name: 'inputs' | 'reads',
  folded: Map<string, string>,
): string | null {
  for (let i = 0; i < list.length; i++) {
    const p = list[i]!.path;
    const problem = pathProblem(p);
    if (problem) return `${JSON.stringify(p)}: ${problem}`;
    if (i > 0 && !(list[i - 1]!.path < p))
      return `${name} are not sorted by path or repeat ${JSON.stringify(p)}`;
    const fold = foldedPath(p);
    const twin = folded.get(fold);
    // a list's own repeats are refused as out of order above: an equal twin is a read that is also allowed
    if (twin === p)
      return `${JSON.stringify(p)} is both read and allowed; a file the generator may change is shipped anyway`;
    if (twin !== undefined)
      return `${JSON.stringify(p)} and ${JSON.stringify(twin)} differ only in case or Unicode form`;
    folded.set(fold, p);
  }
  return null;
}

/** Every file a bundle carries (an input that exists, or a read), with its digest. */
export function shippedFiles(job: Pick<Job, 'inputs' | 'reads'>): Array<{ path: string; sha256: string }> {
  const inputs = job.inputs.filter((i): i is JobRead => i.sha256 !== null);
  return [...inputs, ...(job.reads ?? [])];
}

/** The paths the generator may change: the inputs, never the reads. */
export function allowedPaths(job: Job): Set<string> {
  return new Set(job.inputs.map((i) => i.path));
}
