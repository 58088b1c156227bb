// The errors mint raises for a secret: EGJ_SECRET (exit 2), naming the file (and line) and the rule
// that found it, never the text. A file can be let through with --allow-secret; the instruction cannot.
import { UsageError } from '../core/errors.js';

/** A file (at a line, for its contents) that holds a secret, and the way out. */
export function secretError(file: string, rule: string, line?: number): UsageError {
  const where = line === undefined ? file : `${file}:${line}`;
  return new UsageError(
    'EGJ_SECRET',
    `${where}: looks like a secret (${rule}); refusing to ship it to the generator host. ` +
      `If it is not one, pass --allow-secret ${file}`,
  );
}

/** The instruction holds a secret: `--allow-secret` does not apply, it has to come out. */
export function instructionSecretError(where: string, rule: string, line?: number): UsageError {
  return new UsageError(
    'EGJ_SECRET',
    `${line === undefined ? where : `${where}:${line}`}: looks like a secret (${rule}); refusing to ship it to the generator host. Take it out of the instruction (--allow-secret does not apply to it)`,
  );
}
