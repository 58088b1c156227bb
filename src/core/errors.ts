// Every failure genjob expects is a GenjobError with a stable `code` and the exit code it maps to.
// Anything else that escapes to main.ts is a bug (exit 1). Messages name the file and the rule.
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

/** An operating-system error wrapped with the file and the step that failed. Exit 1 unless reclassified. */
export class IoError extends GenjobError {
  readonly code = 'EGJ_IO';
  readonly exitCode = EXIT.BUG;
  constructor(step: string, file: string, cause: unknown) {
    super(`${file}: ${step} failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

export function errnoOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

/** No usable sandbox for a generator (bwrap missing or unable to start) and no --no-sandbox. */
export class SandboxUnavailableError extends GenjobError {
  readonly code = 'EGJ_SANDBOX_UNAVAILABLE';
  readonly exitCode = EXIT.USAGE;
  constructor(where: string, why: string) {
    super(
      `${where}: ${why}; install the Debian package bubblewrap (apt-get install bubblewrap), or pass --no-sandbox to run generators unconfined`,
    );
  }
}

/** A git command genjob ran failed (exit 2: a missing remote, no repository, an unreachable host). */
export class GitFailedError extends GenjobError {
  readonly code = 'EGJ_GIT';
  readonly exitCode = EXIT.USAGE;
  constructor(
    readonly args: readonly string[],
    readonly status: number,
    stderr: string,
    options?: ErrorOptions,
  ) {
    const last = stderr.trim().split('\n').filter(Boolean).slice(-3).join(' | ');
    super(`git ${args.slice(0, 2).join(' ')} failed (exit ${status}): ${last || 'no message'}`, options);
  }
}

/** A file where genjob keeps a record (queue/, running/, receipts/, leases/, …) is not a readable regular file. */
export class RecordUnreadableError extends UsageError {
  constructor(
    readonly file: string,
    rule: string,
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
