// `work --launch CMD`: any engine that runs a command somewhere and connects its pipes is a
// transport. CMD runs through `sh -c` (e.g. `srun -N1 --quiet -u genjob serve --session`, `kubectl exec
// -i POD -- genjob serve --session`, `podman run -i --rm IMAGE genjob serve --session`) and the
// framed protocol flows over its stdin/stdout, exactly as with a local child or ssh. CMD gets its
// own process group, so a timeout kills the launcher client and everything it started here.
import { spawn } from 'node:child_process';
import type { ServeLauncher, ServeProcess } from './launcher.js';
import { remoteCommandLine } from './ssh-options.js';

export function launchLauncher(command: string, opts: { env?: NodeJS.ProcessEnv } = {}): ServeLauncher {
  return {
    destination: `launch:${command}`,
    start(args: readonly string[]): ServeProcess {
      const child = spawn('/bin/sh', ['-c', remoteCommandLine(command, args)], {
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        env: opts.env ?? process.env,
      });
      const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
        child.once('close', (exitCode, signal) => resolve({ exitCode, signal }));
        child.once('error', () => resolve({ exitCode: null, signal: null }));
      });
      return {
        stdin: child.stdin,
        stdout: child.stdout,
        stderr: child.stderr,
        exited,
        kill() {
          try {
            if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        },
      };
    },
    async shipmentFacts() {
      return { launch: command };
    },
    async close() {},
  };
}
