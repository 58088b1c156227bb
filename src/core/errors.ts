// Every failure genjob expects is a GenjobError with a stable `code` and the exit code it maps to.
// Anything else that escapes to main.ts is a bug (exit 1). Messages name the file and the rule.
import { errnoName, errnoWords, isSystemError } from './errno.js';
import { EXIT, type ExitCode } from './exit-codes.js';

export abstract class GenjobError extends Error {
  abstract readonly code: `EGJ_${string}`;
  abstract readonly exitCode: ExitCode;
  /** Extra machine-readable facts for --json output. */
  details(): Record<string, unknown> {
    return {};
  }
}

/** Bad usage or bad input (exit 2). */
export class UsageError extends GenjobError {
  readonly exitCode = EXIT.USAGE;
  constructor(
    readonly code: `EGJ_${string}`,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Verification failed (exit 3): the receipt or the bytes break a verify rule (docs/exit-codes.md). */
export class RejectedError extends GenjobError {
  readonly exitCode = EXIT.REJECTED;
  constructor(
    readonly code: `EGJ_${string}`,
    message: string,
    readonly file?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
  override details(): Record<string, unknown> {
    return this.file === undefined ? {} : { file: this.file };
  }
}

/** Conflict (exit 4): stale inputs, a key reused with another job, a lock held, a lease lost. */
export class ConflictError extends GenjobError {
  readonly exitCode = EXIT.CONFLICT;
  constructor(
    readonly code: `EGJ_${string}`,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * An operating-system call failed (disk full, quota, permission, I/O error): exit 5, never "a bug". Made
 * once, where the call is made, naming the operation, the file and the errno in words.
 */
export class IoError extends GenjobError {
  readonly code = 'EGJ_IO';
  readonly exitCode = EXIT.IO;
  /** The errno name ('ENOSPC', 'EDQUOT'), when the cause carried one. */
  readonly errno: string | undefined;
  constructor(
    readonly op: string,
    readonly file: string,
    cause: unknown,
    /** What the failure means for the user's work, said after the errno. */
    note?: string,
  ) {
    super(`${file}: ${op} failed: ${errnoWords(cause)}${note ? `; ${note}` : ''}`, { cause });
    this.errno = errnoName(cause);
  }
  /** EGJ_IO for a file found missing where it had to be (errno ENOENT), when no call reported it. */
  static gone(op: string, file: string): IoError {
    return new IoError(op, file, Object.assign(new Error('no such file'), { code: 'ENOENT' }));
  }
  /** `err` itself when it is an IoError already (wrapped once, where the call was made), else a new one. */
  static wrap(op: string, file: string, err: unknown, note?: string): IoError {
    return err instanceof IoError ? err : new IoError(op, file, err, note);
  }
  override details(): Record<string, unknown> {
    return { file: this.file, op: this.op, ...(this.errno ? { errno: this.errno } : {}) };
  }
}

/** A system error from a call on `file`, as EGJ_IO naming it (an fd's error carries no path of its own). */
export function ioErrorAt(file: string, err: unknown): unknown {
  return isSystemError(err) ? IoError.wrap((err as { syscall: string }).syscall, file, err) : err;
}

/** A system error that escaped unwrapped is still the environment's failure, not a bug: name it so. */
export function asIoError(err: unknown): unknown {
  if (err instanceof GenjobError || !isSystemError(err)) return err;
  const { syscall, path, dest } = err as { syscall: string; path?: string; dest?: string };
  const file = path === undefined ? '(no file named)' : dest === undefined ? path : `${path} → ${dest}`;
  return new IoError(syscall, file, err);
}

/**
 * `err` (a system error as EGJ_IO) with `note` appended to its message, saying what the failure left
 * behind; any other error (a bug) is returned as it is.
 */
export function withNote(err: unknown, note: string): unknown {
  const e = asIoError(err);
  if (e instanceof GenjobError) e.message = `${e.message}; ${note}`;
  return e;
}

/** The errno name of `err` ('ENOENT'), also through an IoError; or the `code` of any other coded error. */
export function errnoOf(err: unknown): string | undefined {
  if (err instanceof IoError) return err.errno;
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

/** No usable sandbox for a generator (bwrap missing or unable to start) and no --no-sandbox. */
export class SandboxUnavailableError extends GenjobError {
  readonly code = 'EGJ_SANDBOX_UNAVAILABLE';
  readonly exitCode = EXIT.USAGE;
  constructor(
    where: string,
    why: string,
    hint = 'install the Debian package bubblewrap (apt-get install bubblewrap), or pass --no-sandbox to run generators unconfined',
  ) {
    super(`${where}: ${why}; ${hint}`);
  }
}

/**
 * What git says when the disk failed under it, not the command: the system's words for a full disk, a
 * quota, an I/O error or a read-only file system, and git's own for a write that did not complete
 * (checkout-index's "unable to write file" names no errno; a loose object's "Out of diskspace").
 */
const GIT_DISK_FAILED =
  /No space left on device|Disk quota exceeded|Input\/output error|Read-only file system|Out of diskspace|unable to write (?:new index file|file|loose object)/i;

/**
 * A git command failed: exit 2 (a bad range, no such remote, not a repository), or exit 5 when what git
 * says is that the disk failed (GIT_DISK_FAILED), so a script retries it as it does any EGJ_IO.
 */
export class GitFailedError extends GenjobError {
  readonly code = 'EGJ_GIT';
  readonly exitCode: ExitCode;
  constructor(
    readonly args: readonly string[],
    readonly status: number,
    readonly stderr: string,
    options?: ErrorOptions,
  ) {
    super(`git ${args.slice(0, 2).join(' ')} failed (exit ${status}): ${gitSaid(stderr)}`, options);
    this.exitCode = GIT_DISK_FAILED.test(stderr) ? EXIT.IO : EXIT.USAGE;
  }

  /** The same failure, its message led by what genjob was doing (`pull from origin`). */
  within(doing: string): GitFailedError {
    const e = new GitFailedError(this.args, this.status, this.stderr, { cause: this.cause });
    e.message = `${doing}: ${e.message}`;
    return e;
  }
}

/**
 * A git command ran out of its time (a remote that stalls, or a network too slow) and was stopped with
 * every process it started: exit 75, as for anything to try again later.
 */
export class GitTimedOutError extends GenjobError {
  readonly code = 'EGJ_GIT_TIMEOUT';
  readonly exitCode = EXIT.OPEN;
  constructor(
    readonly args: readonly string[],
    readonly timeoutMs: number,
  ) {
    super(
      `git ${args.slice(0, 2).join(' ')} did not finish within ${timeoutMs / 1000} s; it was stopped, with every process it started`,
    );
  }

  /** The same failure, its message led by what genjob was doing (`pull from origin`) and ended by `then`. */
  within(doing: string, then: string): GitTimedOutError {
    const e = new GitTimedOutError(this.args, this.timeoutMs);
    e.message = `${doing}: ${e.message}; ${then}`;
    return e;
  }
}

/** Git's first `fatal:`/`error:` lines quoted at most, and each at most this long. */
const GIT_FIRST_LINES = 2;
const GIT_LINE_CHARS = 300;

/**
 * What git said, in one line: its first `fatal:` or `error:` lines (they say what failed: "'origin' does
 * not appear to be a git repository") and its last three (the advice that follows), bounded.
 */
function gitSaid(stderr: string): string {
  const lines = stderr
    .trim()
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => (l.length > GIT_LINE_CHARS ? `${l.slice(0, GIT_LINE_CHARS)}…` : l));
  const tail = Math.max(0, lines.length - 3);
  const first = lines
    .slice(0, tail)
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => /^(fatal|error):/i.test(line))
    .slice(0, GIT_FIRST_LINES);
  const skipped = first.length > 0 && first[first.length - 1]!.i < tail - 1;
  const quoted = [...first.map((f) => f.line), ...(skipped ? ['…'] : []), ...lines.slice(tail)];
  return quoted.join(' | ') || 'no message';
}

/** A file where genjob keeps a record (queue/, running/, receipts/, leases/, …) is not a readable regular file. */
export class RecordUnreadableError extends UsageError {
  constructor(
    readonly file: string,
    /** What the file is instead (`is a symbolic link`, `is 2048 bytes, over the cap of 1024`). */
    readonly rule: string,
    /** Set when the file is a regular one, only larger than this cap. */
    readonly cap?: number,
  ) {
    super('EGJ_RECORD_UNREADABLE', `${file}: ${rule}; a record must be a regular file`);
  }
  override details(): Record<string, unknown> {
    return { file: this.file };
  }
}

/** The provider's batch API failed or answered unexpectedly (exit 3); the outbox keeps the step for the next run. */
export class BatchApiError extends GenjobError {
  readonly code = 'EGJ_BATCH_API';
  readonly exitCode = EXIT.REJECTED;
}

/** A receipt of a shadow plane (or naming one) where only live material may go: verify, apply, a live commit. */
export class ShadowPlaneError extends RejectedError {
  constructor(file: string, plane: string) {
    super(
      'EGJ_SHADOW',
      `${file}: receipt is of plane ${JSON.stringify(plane.slice(0, 80))}; shadow results are never verified or applied (make one live with genjob promote)`,
      file,
    );
  }
}

/** A generator host could not be reached (connect, hello) in the middle of a run: recorded, never an exit status. */
export class HostDownError extends GenjobError {
  readonly code = 'EGJ_HOST_DOWN';
  readonly exitCode = EXIT.BUG;
  constructor(
    readonly destination: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${destination}: ${message}`, options);
  }
}
