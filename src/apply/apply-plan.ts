// The apply plan, pure: from the job, its verified outputs and the repository's current digests to the
// list of writes, or the verdict that the job is stale (verify rule 6, docs/exit-codes.md). Every input is checked,
// not only the outputs: a job is applied only to exactly the tree it was minted from, so a user's edit
// made after minting is never overwritten. Writes are sorted by path; unchanged outputs are dropped.
// A write keeps the file's mode (a new file: 0644), with the executable bits added when the receipt says so.

import { ConflictError, RejectedError } from '../core/errors.js';
import type { Job } from '../core/job.js';

/** One file written by an apply: digests before (null = created) and after, and the mode written. */
export interface Write {
  path: string;
  before: string | null;
  after: string;
  mode: number;
  /** The mode the replaced file had, when the write changes it (revert puts it back). */
  before_mode?: number;
}

/** What the repository holds at a path now: sha256 and permission bits of a regular file, or nulls when absent. */
export interface CurrentFile {
  sha256: string | null;
  mode: number | null;
}

export const NEW_FILE_MODE = 0o644;

/** The mode a write gives a file the receipt marks executable: the mode it keeps, with every execute bit. */
export function withExecutableBits(kept: number): number {
  return kept | 0o111;
}

export type ApplyPlan =
  | { kind: 'plan'; writes: Write[] }
  | { kind: 'stale'; path: string; minted: string | null; current: string | null }
  | { kind: 'invalid'; path: string; rule: string };

export function planApply(
  job: Pick<Job, 'inputs'>,
  outputs: ReadonlyArray<{ path: string; sha256: string; executable?: true }>,
  current: ReadonlyMap<string, CurrentFile>,
): ApplyPlan {
  const minted = new Map<string, string | null>();
  for (const input of job.inputs) {
    minted.set(input.path, input.sha256);
    const now = current.get(input.path)?.sha256 ?? null;
    if (now !== input.sha256) return { kind: 'stale', path: input.path, minted: input.sha256, current: now };
  }
  const writes: Write[] = [];
  const seen = new Set<string>();
  for (const out of outputs) {
    if (!minted.has(out.path))
      return { kind: 'invalid', path: out.path, rule: 'is not one of the job allowed paths' };
    if (seen.has(out.path))
      return { kind: 'invalid', path: out.path, rule: 'is listed twice among the outputs' };
    seen.add(out.path);
    const before = minted.get(out.path) ?? null;
    if (before === out.sha256) continue;
    const mode = current.get(out.path)?.mode;
    const kept = mode == null ? NEW_FILE_MODE : mode & 0o777;
    const written = out.executable ? withExecutableBits(kept) : kept;
    writes.push({
      path: out.path,
      before,
      after: out.sha256,
      mode: written,
      ...(mode != null && written !== kept ? { before_mode: kept } : {}),
    });
  }
  // Stryker disable next-line EqualityOperator,ConditionalExpression: paths are unique here (a repeat is refused above), so no tie occurs, and V8's sort reads only whether the result is < 0
  writes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { kind: 'plan', writes };
}

function short(sha: string | null): string {
  return sha === null ? 'absent' : `sha256 ${sha.slice(0, 12)}`;
}

/** The EGJ_STALE conflict (exit 4) for a path whose bytes are no longer what the job expects. */
export function staleError(
  path: string,
  expected: string | null,
  current: string | null,
  context: string,
): ConflictError {
  return new ConflictError(
    'EGJ_STALE',
    `${path}: the repository changed under the job (expected ${short(expected)}, found ${short(current)}); ${context}`,
  );
}

/** The writes of a plan, or the error its verdict stands for. */
export function expectPlan(plan: ApplyPlan): Write[] {
  if (plan.kind === 'plan') return plan.writes;
  if (plan.kind === 'stale') {
    throw staleError(
      plan.path,
      plan.minted,
      plan.current,
      'rule 6: every input must still match the job; nothing was written',
    );
  }
  throw new RejectedError(
    'EGJ_OUTSIDE_CONTRACT',
    `${plan.path}: output ${plan.rule} (rule 3); nothing was written`,
    plan.path,
  );
}
