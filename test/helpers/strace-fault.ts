// Fail the calls one process tree makes on one file, for real: strace traces only the calls naming that
// file (-P), so an injection (`inject=SYSCALL:error=ERRNO`) fails exactly those, whatever else runs.
import { execa } from 'execa';

/** Whether strace runs here (the suite's system check installs it; a test skips without it). */
export const haveStrace =
  (await execa('strace', ['-V'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;

/** strace's argv running `argv` with every `syscall` on `file` failing with `errno`. */
export function failingOn(file: string, syscall: string, errno: string, argv: readonly string[]): string[] {
  return ['-f', '-qq', '-o', '/dev/null', '-P', file, '-e', `inject=${syscall}:error=${errno}`, ...argv];
}
