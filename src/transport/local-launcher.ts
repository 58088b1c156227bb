// The local transport: `genjob serve` as a child process of the worker, over stdin/stdout.
// Same protocol and same serve code as over ssh; only the pipe differs. The child gets its own
// process group so a timeout can kill it and everything its generator started.
import { spawn } from 'node:child_process';
import { cliEntry } from '../cli/package-root.js';
import type { ServeLauncher, ServeProcess } from './launcher.js';

export function localLauncher(opts: { env?: NodeJS.ProcessEnv } = {}): ServeLauncher {
  return {
    destination: 'local',
    start(args: readonly string[]): ServeProcess {
      const child = spawn(process.execPath, [cliEntry(), 'serve', ...args], {
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
      return { host: 'local' };
    },
    async close() {},
  };
}
