// The only place that turns outcomes into exit codes (docs/exit-codes.md):
// help/version → 0, usage → 2, a GenjobError → its own code (EGJ_IO → 5, also for a system error that escaped
// unwrapped), anything else → 1 ("this is a bug"). A stdout that cannot be written ends quietly (output-errors.ts).
// Results go to stdout (JSON with --json, exact), errors to stderr as one line naming the file and rule;
// human text and error lines pass through terminalText(), since parts of them come from a host.

import type { Command } from 'commander';
import { asIoError, GenjobError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { terminalJson, terminalText } from '../core/terminal-text.js';
import { guardOutput, outputFailed } from './output-errors.js';
import { writePaged } from './pager.js';
import type { CommandResult } from './result.js';

function wantsJson(argv: readonly string[]): boolean {
  return argv.includes('--json');
}

/** The version of every --json result's shape (docs/cli.md); it changes only when a field changes meaning. */
export const RESULT_SCHEMA = 'genjob/result@1';

export function jsonLine(fields: Record<string, unknown>): string {
  return `${terminalJson(JSON.stringify({ schema: RESULT_SCHEMA, ...fields }))}\n`;
}

export function emit(result: CommandResult, json: boolean): void {
  if (json) process.stdout.write(jsonLine({ ok: (result.exitCode ?? EXIT.OK) === EXIT.OK, ...result.json }));
  else if (result.human) {
    // Human output carries host-chosen text (receipt reasons, stderr tails): never raw to a terminal.
    const human = result.terminalSafe ? result.human : terminalText(result.human, { lines: true });
    const text = human.endsWith('\n') ? human : `${human}\n`;
    const note = result.note && terminalText(result.note, { lines: true });
    if (result.page) writePaged(text);
    // the note once stdout took the result: when it could not (a closed pipe, a full disk) the one
    // line said is the failure's (output-errors.ts)
    else if (note)
      process.stdout.write(text, (err) => {
        if (!err && !outputFailed()) process.stderr.write(note.endsWith('\n') ? note : `${note}\n`);
      });
    else process.stdout.write(text);
  }
  if (result.stderr) process.stderr.write(terminalText(result.stderr, { lines: true }));
  process.exitCode = outputFailed() ? EXIT.IO : (result.exitCode ?? EXIT.OK);
}

/**
 * A commander error's message for a JSON result: its own words without its `error: ` prefix, and for a
 * command group given no subcommand (commander shows the group's help, its message only "(outputHelp)")
 * which subcommands there are.
 */
function usageMessage(program: Command, argv: readonly string[], code: string, message = ''): string {
  if (code === 'commander.help') {
    const path: Command[] = [];
    let at = program;
    for (const word of argv.slice(2)) {
      const sub = at.commands.find((c) => c.name() === word);
      if (!sub) break;
      path.push(sub);
      at = sub;
    }
    const subs = at.commands.map((c) => c.name()).filter((n) => n !== 'help');
    if (subs.length > 0) {
      const name = path.map((c) => c.name()).join(' ') || 'genjob';
      return `${name} needs a subcommand: ${subs.join(', ')} (genjob ${path.map((c) => c.name()).join(' ')}${path.length > 0 ? ' ' : ''}--help for usage)`;
    }
  }
  return message.replace(/^error: /, '');
}

export async function main(argv: string[]): Promise<void> {
  const { buildProgram } = await import('./program.js');
  const json = wantsJson(argv);
  guardOutput();
  const program = buildProgram({ json, argv });
  try {
    await program.parseAsync(argv);
  } catch (caught) {
    const err = asIoError(caught);
    const e = err as { code?: string; exitCode?: number; message?: string };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      // help asked for and version are successes; help shown for a missing command, and every
      // other commander error, are bad usage
      const ok = e.exitCode === 0;
      process.exitCode = ok ? EXIT.OK : EXIT.USAGE;
      if (!ok && json)
        process.stdout.write(
          jsonLine({ ok: false, code: 'EGJ_USAGE', message: usageMessage(program, argv, e.code, e.message) }),
        );
      return;
    }
    if (err instanceof GenjobError) {
      process.stderr.write(`genjob: ${err.code}: ${terminalText(err.message)}\n`);
      if (json)
        process.stdout.write(jsonLine({ ok: false, code: err.code, message: err.message, ...err.details() }));
      process.exitCode = err.exitCode;
      return;
    }
    process.stderr.write(
      `genjob: internal error (this is a bug): ${terminalText((err as Error)?.message ?? String(err))}\n`,
    );
    if (argv.includes('--debug') || process.env.GENJOB_DEBUG)
      process.stderr.write(`${(err as Error)?.stack ?? ''}\n`);
    else process.stderr.write('genjob: run again with --debug for the stack trace\n');
    if (json)
      process.stdout.write(
        jsonLine({ ok: false, code: 'EGJ_BUG', message: String((err as Error)?.message) }),
      );
    process.exitCode = EXIT.BUG;
  }
}
