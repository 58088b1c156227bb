// The only place that turns outcomes into exit codes (docs/exit-codes.md):
// help/version → 0, usage → 2, a GenjobError → its own code (EGJ_IO → 5, also for a system error that escaped
// unwrapped), anything else → 1 ("this is a bug"). A stdout that cannot be written ends quietly (output-errors.ts).
// Results go to stdout (JSON with --json), errors to stderr as one line naming the file and rule.

import { isSystemError } from '../core/errno.js';
import { GenjobError, IoError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { guardOutput, outputFailed } from './output-errors.js';
import type { CommandResult } from './result.js';

function wantsJson(argv: readonly string[]): boolean {
  return argv.includes('--json');
}

export function emit(result: CommandResult, json: boolean): void {
  if (json) process.stdout.write(`${JSON.stringify(result.json)}\n`);
  else if (result.human)
    process.stdout.write(result.human.endsWith('\n') ? result.human : `${result.human}\n`);
  process.exitCode = outputFailed() ? EXIT.IO : (result.exitCode ?? EXIT.OK);
}

/** A system error that escaped unwrapped is still the environment's failure, not a bug: name it so. */
function asIoError(err: unknown): unknown {
  if (err instanceof GenjobError || !isSystemError(err)) return err;
  const { syscall, path, dest } = err as { syscall: string; path?: string; dest?: string };
  const file = path === undefined ? '(no file named)' : dest === undefined ? path : `${path} → ${dest}`;
  return new IoError(syscall, file, err);
}

export async function main(argv: string[]): Promise<void> {
  const { buildProgram } = await import('./program.js');
  const json = wantsJson(argv);
  guardOutput();
  try {
    await buildProgram().parseAsync(argv);
  } catch (caught) {
    const err = asIoError(caught);
    const e = err as { code?: string; exitCode?: number; message?: string };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      // help asked for and version are successes; help shown for a missing command, and every
      // other commander error, are bad usage
      const ok = e.exitCode === 0;
      process.exitCode = ok ? EXIT.OK : EXIT.USAGE;
      if (!ok && json)
        process.stdout.write(`${JSON.stringify({ ok: false, code: 'EGJ_USAGE', message: e.message })}\n`);
      return;
    }
    if (err instanceof GenjobError) {
      process.stderr.write(`genjob: ${err.code}: ${err.message}\n`);
      if (json)
        process.stdout.write(
          `${JSON.stringify({ ok: false, code: err.code, message: err.message, ...err.details() })}\n`,
        );
      process.exitCode = err.exitCode;
      return;
    }
    process.stderr.write(
      `genjob: internal error (this is a bug): ${(err as Error)?.message ?? String(err)}\n`,
    );
    if (argv.includes('--debug') || process.env.GENJOB_DEBUG)
      process.stderr.write(`${(err as Error)?.stack ?? ''}\n`);
    else process.stderr.write('genjob: run again with --debug for the stack trace\n');
    if (json)
      process.stdout.write(
        `${JSON.stringify({ ok: false, code: 'EGJ_BUG', message: String((err as Error)?.message) })}\n`,
      );
    process.exitCode = EXIT.BUG;
  }
}
