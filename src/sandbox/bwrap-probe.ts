// Is bubblewrap here and can it start a sandbox? Asked once per process (the answer is cached),
// by running `true` under the very namespace flags and seccomp filter a generator gets (bwrap-argv.ts,
// seccomp.ts): a host that cannot make a user namespace (a chroot, a kernel that forbids them) or load
// the filter is refused here with one line, not by every run failing. A missing or broken bwrap is refused naming the Debian package, unless
// the host chose --no-sandbox. A sandbox user's sandbox (sandbox-user.ts) is probed as that user: a host
// that lets root make a user namespace but no one else (a sysctl, an AppArmor rule) is refused naming the
// remedy, and never runs the sandbox as root instead.
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { SandboxUnavailableError } from '../core/errors.js';
import { NAMESPACE_FLAGS } from './bwrap-argv.js';
import type { SandboxUser } from './sandbox-user.js';
import { FILTER_FD, sandboxFilter, sendFilter } from './seccomp.js';

/** The probe's answer per user it runs as (-1: genjob's own). */
const probes = new Map<number, Promise<string | null>>();

/** null when bwrap works (started as `user`, when given); otherwise why not. */
export function probeBwrap(user?: SandboxUser): Promise<string | null> {
  const known = probes.get(user?.uid ?? -1);
  if (known) return known;
  const probe = new Promise<string | null>((resolve) => {
    const args = [...NAMESPACE_FLAGS, '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev'];
    const child = spawn('bwrap', ['--seccomp', String(FILTER_FD), ...args, '--', 'true'], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
    sendFilter(child.stdio, sandboxFilter());
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
  probes.set(user?.uid ?? -1, probe);
  return probe;
}

/** bwrap is there but may not make its namespaces: installing it again would not help. */
const NO_NAMESPACES =
  'bwrap is installed, but this host may not create the user namespace every sandbox gets (a chroot, or a kernel or container that forbids them): run serve where it may, or pass --no-sandbox to run generators unconfined';

/** Started as a sandbox user, bwrap could not make its namespaces: that user may not, where root may. */
const userMayNot = (user: SandboxUser) =>
  `bwrap runs as the sandbox user ${user.label}, and this host may not let an unprivileged user create a user namespace: allow it (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces above 0; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or pass --sandbox-user root to run the sandbox as root (weaker: docs/trust.md)`;

/** Throw EGJ_SANDBOX_UNAVAILABLE unless bwrap can start a sandbox here (as `user`, when given). */
export async function requireBwrap(where: string, user?: SandboxUser): Promise<void> {
  const why = await probeBwrap(user);
  if (why === null) return;
  // the sandbox user may not where root may (asked only now): the remedy is the host's sysctl
  if (user && !/not installed/.test(why) && (await probeBwrap()) === null)
    throw new SandboxUnavailableError(where, `${why} as ${user.label}`, userMayNot(user));
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
