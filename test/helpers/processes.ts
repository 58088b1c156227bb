// Find live processes by their command line: exactly, how a test checks that a generator's child (marked
// by a unique `sleep N.NNN`) is gone, whichever PID namespace it was started in; or by a path it names,
// how a test finds the processes still working in its temp directory.
import { readdirSync, readFileSync } from 'node:fs';

/** Pids of live (non-zombie) processes other than this one whose command line (NUL-separated) passes `test`. */
function liveProcessesWhere(test: (cmdline: string) => boolean): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid)
    .filter((n) => {
      try {
        return (
          test(readFileSync(`/proc/${n}/cmdline`, 'utf8')) &&
          !/^State:\s+Z/m.test(readFileSync(`/proc/${n}/status`, 'utf8'))
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Pids of live (non-zombie) processes whose command line is exactly `argv`. */
export function liveProcesses(argv: string[]): number[] {
  const want = `${argv.join('\0')}\0`;
  return liveProcessesWhere((cmdline) => cmdline === want);
}

/** Pids of live (non-zombie) processes other than this one whose command line contains `text`. */
export function processesNaming(text: string): number[] {
  return liveProcessesWhere((cmdline) => cmdline.includes(text));
}
