// Is bubblewrap here and can it start a sandbox? Asked once per process (the answer is cached),
// by running `true` under the very namespace flags and seccomp filter a generator gets (bwrap-argv.ts,
// seccomp.ts): a host that cannot make a user namespace (a chroot, a kernel that forbids them) or load
// the filter is refused here with one line, not by every run failing. A missing or broken bwrap is refused naming the Debian package, unless
// the host chose --no-sandbox.
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { SandboxUnavailableError } from '../core/errors.js';
import { NAMESPACE_FLAGS } from './bwrap-argv.js';
import { FILTER_FD, keyringFilter, sendFilter } from './seccomp.js';

let probe: Promise<string | null> | undefined;

/** null when bwrap works; otherwise why not. */
export function probeBwrap(): Promise<string | null> {
  probe ??= new Promise((resolve) => {
    const args = [...NAMESPACE_FLAGS, '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev'];
    const child = spawn('bwrap', ['--seccomp', String(FILTER_FD), ...args, '--', 'true'], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    sendFilter(child.stdio, keyringFilter());
    let err = '';
    child.stderr?.on('data', (c: Buffer) => {
      err = (err + c.toString('utf8')).slice(-500);
    });
    child.once('error', (e: NodeJS.ErrnoException) =>
      resolve(e.code === 'ENOENT' ? 'bwrap is not installed' : `bwrap cannot start: ${e.message}`),
    );
    child.once('close', (code, signal) => {
      if (code === 0) resolve(null);
      else
        resolve(
          `bwrap cannot start a sandbox (${signal ?? `exit ${code}`}${err ? `: ${err.trim().split('\n')[0]}` : ''})`,
        );
    });
  });
  return probe;
}

/** bwrap is there but may not make its namespaces: installing it again would not help. */
const NO_NAMESPACES =
  'bwrap is installed, but this host may not create the user namespace every sandbox gets (a chroot, or a kernel or container that forbids them): run serve where it may, or pass --no-sandbox to run generators unconfined';

/** Throw EGJ_SANDBOX_UNAVAILABLE unless bwrap can start a sandbox here. */
export async function requireBwrap(where: string): Promise<void> {
  const why = await probeBwrap();
  if (why !== null)
    throw new SandboxUnavailableError(where, why, /namespace/i.test(why) ? NO_NAMESPACES : undefined);
}

/**
 * Throw EGJ_SANDBOX_UNAVAILABLE, as requireBwrap does, when no directory of PATH holds an executable
 * `bwrap`: what a caller that probes only after a failed run (check) tells before it builds anything.
 * Looking costs a few stats, where the probe starts a sandbox.
 */
export function requireBwrapOnPath(where: string, path = process.env.PATH ?? ''): void {
  for (const dir of path.split(delimiter)) {
    const file = join(dir || '.', 'bwrap');
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return;
    } catch {
      // not here
    }
  }
  throw new SandboxUnavailableError(where, 'bwrap is not installed');
}
