// Commands that work through several jobs (verify --all, apply --all) report what they did before a
// failure and every failure, not only the first: a failure becomes a row and a stderr line, and the
// exit code is the worst one seen (a bug over the environment's failure over a conflict over a rejection
// over bad input).
import { GenjobError } from '../core/errors.js';
import { EXIT, type ExitCode } from '../core/exit-codes.js';

export interface Failure {
  key: string;
  code: string;
  message: string;
  exitCode: ExitCode;
}

/** The failure a GenjobError describes; anything else is a bug and is thrown on. */
export function failureOf(key: string, err: unknown): Failure {
  if (!(err instanceof GenjobError)) throw err;
  return { key, code: err.code, message: err.message, exitCode: err.exitCode };
}

// every exit code has a rank: one left out would count for less than OK, and a run whose only failure
// was the disk's would exit 0. The environment's failure outranks a verdict: what it left unknown needs
// a retry before any answer holds.
const RANK: readonly ExitCode[] = [
  EXIT.OK,
  EXIT.OPEN,
  EXIT.USAGE,
  EXIT.REJECTED,
  EXIT.CONFLICT,
  EXIT.IO,
  EXIT.SIGINT,
  EXIT.BUG,
];

/** The worst of the exit codes (OK when there are none). */
export function worstExit(codes: readonly ExitCode[]): ExitCode {
  return codes.reduce<ExitCode>((a, b) => (RANK.indexOf(b) > RANK.indexOf(a) ? b : a), EXIT.OK);
}

/**
 * One stderr line per failure, as main.ts prints a single error; a line told already is not told again
 * (every checker of a job whose input went stale fails with the job's one error).
 */
export function failureLines(failures: readonly Failure[]): string {
  return [...new Set(failures.map((f) => `genjob: ${f.code}: ${f.message}\n`))].join('');
}

/** What a result over many jobs adds when some failed: the worst exit code and a stderr line each. */
export function failureFields(failures: readonly Failure[]): { exitCode?: ExitCode; stderr?: string } {
  return failures.length === 0
    ? {}
    : { exitCode: worstExit(failures.map((f) => f.exitCode)), stderr: failureLines(failures) };
}

/**
 * The top-level `code` and `message` of a failed result over many entries (every failure is
 * `{ ok: false, code, message }`): the code of the first entry with the worst exit code, and `summary`.
 */
export function worstFailure(
  entries: ReadonlyArray<{ code: string; exitCode: ExitCode }>,
  summary: string,
): { code?: string; message?: string } {
  const worst = worstExit(entries.map((e) => e.exitCode));
  const first = entries.find((e) => e.exitCode === worst);
  return first === undefined ? {} : { code: first.code, message: summary };
}

/** The closing line over many jobs: how many failed, and each by key and code (`2 of 5 job(s) not applied: …`). */
export function failureSummary(failures: readonly Failure[], total: number, what: string): string {
  return `${failures.length} of ${total} job(s) ${what}: ${failures.map((f) => `${f.key.slice(0, 12)} (${f.code})`).join(', ')}`;
}
