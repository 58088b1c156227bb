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

/** Verification failed (exit 3): the receipt or the bytes break a rule of DESIGN.md "Verify". */
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
