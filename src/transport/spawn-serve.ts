// Start a process that speaks the framed protocol on its stdin/stdout (a local serve, or a launcher
// command that runs one somewhere). It gets its own process group, so kill() ends it and everything
// it started here, e.g. on a timeout.
import { spawn } from 'node:child_process';
import type { ServeProcess } from './launcher.js';

export function spawnServe(file: string, argv: readonly string[], env: NodeJS.ProcessEnv): ServeProcess {
  const child = spawn(file, argv, { stdio: ['pipe', 'pipe', 'pipe'], detached: true, env });
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
}
