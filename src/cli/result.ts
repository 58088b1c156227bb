// What every command returns: a human text for a terminal and a JSON object for scripts.
// main.ts prints exactly one of them and sets the exit code; commands never print results themselves.
import type { ExitCode } from '../core/exit-codes.js';

export interface CommandResult {
  exitCode?: ExitCode;
  human: string;
  json: Record<string, unknown>;
  /** Error lines for stderr (e.g. each failing job of verify --all), printed with or without --json. */
  stderr?: string;
  /**
   * Status lines for a person, printed on stderr only without --json, so stdout holds just what a script
   * reads (mint: the keys).
   */
  note?: string;
  /** Long human output: shown through $PAGER when stdout is a terminal (see pager.ts). */
  page?: boolean;
  /** The human text is already made safe for a terminal (its colour codes are genjob's own). */
  terminalSafe?: boolean;
}

/** Options every command accepts. */
export interface CommonOptions {
  root?: string;
  json?: boolean;
  debug?: boolean;
}
