// Exit codes are public API (docs/exit-codes.md): a change here is a breaking change.
export const EXIT = {
  OK: 0,
  BUG: 1,
  USAGE: 2,
  REJECTED: 3,
  CONFLICT: 4,
  /** The environment failed: disk full, quota, permission, I/O error (EGJ_IO). */
  IO: 5,
  /** Open, undecided: a run gate whose watermark has not closed (EX_TEMPFAIL: try again later). */
  OPEN: 75,
  /** `work` stopped by SIGINT (128 + 2, as shells expect); SIGTERM, a service stop, still exits 0. */
  SIGINT: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
