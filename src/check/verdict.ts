// A check's verdict from every attempt ever made for one record (pure). An attempt is a pass, a fail,
// an error (the checker could not run: sandbox or setup failure, killed from outside) or, for a judge,
// an uncertain round. Errors are no evidence either way: they never make a fail, and only errors make
// `error`. Attempts that disagree make `flaky`, so re-running until green can never end in `pass`.
// A judge's round is decided by quorum over its samples' votes.

export type Verdict = 'pass' | 'fail' | 'flaky' | 'uncertain' | 'error';
export type Outcome = 'pass' | 'fail' | 'uncertain' | 'error';
export type Vote = 'pass' | 'fail' | 'invalid' | 'error';

export const VERDICTS: readonly Verdict[] = ['pass', 'fail', 'flaky', 'uncertain', 'error'];

export function verdictOf(outcomes: readonly Outcome[]): Verdict {
  const evidence = outcomes.filter((o) => o !== 'error');
  if (evidence.length === 0) return 'error';
  if (evidence.includes('uncertain')) return 'uncertain';
  if (evidence.every((o) => o === 'pass')) return 'pass';
  if (evidence.every((o) => o === 'fail')) return 'fail';
  return 'flaky';
}

/** One mark per attempt, oldest first: ✓ pass, ✗ fail, ? uncertain, ! error (e.g. `✗✓` for flaky). */
export function marksOf(outcomes: readonly Outcome[]): string {
  const mark = { pass: '✓', fail: '✗', uncertain: '?', error: '!' } as const;
  return outcomes.map((o) => mark[o]).join('');
}

/** A judge round: `quorum` equal votes decide it; fewer is uncertain; a round of only errors is an error. */
export function quorumOutcome(votes: readonly Vote[], quorum: number): Outcome {
  const passes = votes.filter((v) => v === 'pass').length;
  const fails = votes.filter((v) => v === 'fail').length;
  if (passes >= quorum) return 'pass';
  if (fails >= quorum) return 'fail';
  if (votes.every((v) => v === 'error')) return 'error';
  return 'uncertain';
}

/** How many samples agreed with the larger side, e.g. `2/3`. */
export function agreementOf(votes: readonly Vote[]): string {
  const passes = votes.filter((v) => v === 'pass').length;
  const fails = votes.filter((v) => v === 'fail').length;
  return `${Math.max(passes, fails)}/${votes.length}`;
}

export interface RunFacts {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** The command could not be started at all (spawn failed, the sandbox refused to start). */
  startFailed: string | null;
}

/** SIGKILL from outside the run (the kernel's out-of-memory killer, most often), as a shell reports it. */
const KILLED_EXIT = 128 + 9;

/** What one run of a command proves: exit 0 passes, a timeout or another exit fails, being killed is an error. */
export function outcomeOfRun(r: RunFacts): { outcome: Outcome; why: string | null } {
  if (r.startFailed !== null) return { outcome: 'error', why: r.startFailed };
  if (r.timedOut) return { outcome: 'fail', why: 'timed out' };
  if (r.signal !== null) return { outcome: 'error', why: `killed by ${r.signal}` };
  if (r.exitCode === 0) return { outcome: 'pass', why: null };
  if (r.exitCode === KILLED_EXIT) return { outcome: 'error', why: 'killed by SIGKILL (out of memory?)' };
  return { outcome: 'fail', why: `exit ${r.exitCode}` };
}
