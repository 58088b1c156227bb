// Exit codes are public API (docs/exit-codes.md): a change here is a breaking change.
export const EXIT = {
  OK: 0,
  BUG: 1,
  USAGE: 2,
  REJECTED: 3,
  CONFLICT: 4,
  /** `work` stopped by SIGINT (128 + 2, as shells expect); SIGTERM, a service stop, still exits 0. */
  SIGINT: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
