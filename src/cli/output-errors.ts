// What happens when stdout or stderr cannot be written (a closed pipe: `| head -0`; a full disk:
// `> /dev/full`): the command's work is already done and recorded, so it ends quietly with exit 5
// instead of dying on an unhandled 'error' event with a stack trace. EPIPE says nothing (the reader left);
// any other failure of stdout gets one line on stderr, if stderr still works.
import { errnoName, errnoWords } from '../core/errno.js';
import { EXIT } from '../core/exit-codes.js';

let failed = false;

/** True once a write to stdout or stderr failed. */
export function outputFailed(): boolean {
  return failed;
}

function onError(stream: 'stdout' | 'stderr', err: Error): void {
  const first = !failed;
  failed = true;
  if (!process.exitCode) process.exitCode = EXIT.IO;
  if (!first || stream === 'stderr' || errnoName(err) === 'EPIPE') return;
  try {
    process.stderr.write(
      `genjob: EGJ_IO: stdout: write failed: ${errnoWords(err)}; what the command did is done and recorded\n`,
    );
  } catch {
    // stderr is gone too: the exit code is all that is left
  }
}

/** Install once, before anything is printed. */
export function guardOutput(): void {
  process.stdout.on('error', (err: Error) => onError('stdout', err));
  process.stderr.on('error', (err: Error) => onError('stderr', err));
}
