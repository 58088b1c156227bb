// How one generator command is started under the host's policy: inside bubblewrap (own
// namespaces, the scratch directory the only writable place, an allowlisted environment, the kernel
// keyring and io_uring refused by a seccomp filter: seccomp.ts), or with
// --no-sandbox as a plain `sh -c` with the same allowlist and a tag that lets us sweep every
// process it started when the run ends. The only entry point remote/run-generator.ts uses. Either way a
// policy with a sandbox user (sandbox-user.ts) starts the process as that user.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SandboxUnavailableError } from '../core/errors.js';
import { RUN_TAG_VAR, sweepRun } from '../core/process-sweep.js';
import { nodeFs } from '../store/fs-port.js';
import { bwrapArgv, nodeDir, SANDBOX_HOME } from './bwrap-argv.js';
import { requireBwrap } from './bwrap-probe.js';
import { keptDevices } from './device-nodes.js';
import { generatorEnv } from './env-allowlist.js';
import { type SandboxPolicy, sandboxIsRoot } from './policy.js';
import { giveTree, type SandboxUser, unreachable } from './sandbox-user.js';
import { FILTER_FD, sandboxFilter, sandboxFilterCovers } from './seccomp.js';

export interface ConfineRun {
  command: string;
  /** Per-run directory holding the workspace, the job file and the usage file. */
  scratch: string;
  workspace: string;
  /** Files in scratch the generator may read but not change (the job file). */
  readOnly: readonly string[];
  /** GENJOB_* job variables. */
  jobEnv: Record<string, string>;
}

export interface Confined {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** End every process the run started (after it exited, timed out or was abandoned). */
  finish(pid: number | undefined): void;
  /** The seccomp filter bwrap reads from the child's fd 3 (seccomp.ts sendFilter); none without a sandbox. */
  filter?: Buffer;
  /** Spawn's uid and gid: the sandbox user's (libuv clears the supplementary groups too); none: genjob's own. */
  uid?: number;
  gid?: number;
}

/** The spawn options that start a process as `user`. */
function asUser(user: SandboxUser | undefined): { uid?: number; gid?: number } {
  return user ? { uid: user.uid, gid: user.gid } : {};
}

/** Every sandbox binds node's directory (bwrap-argv.ts): refused, not a bwrap that fails, where the user cannot reach it. */
function requireNodeReachable(user: SandboxUser, where: string): void {
  for (const dir of nodeDir()) {
    const blocked = unreachable(dir, user);
    if (blocked !== null)
      throw new SandboxUnavailableError(
        where,
        `the node running genjob is in ${dir}, which every sandbox shows, and the sandbox user ${user.label} cannot reach it (${blocked} is not searchable by it)`,
        'run genjob with a node installed where every user may read it (/usr/local, /opt), or pass --sandbox-user root to run the sandbox as root',
      );
  }
}

/**
 * `probeFirst: false` starts bubblewrap without asking the probe first (bwrap-probe.ts): the caller asks it
 * only when the run could not start (check: run-confined.ts). Either way bubblewrap runs the command confined
 * or not at all.
 */
export async function confine(
  policy: SandboxPolicy,
  run: ConfineRun,
  opts: { probeFirst?: boolean; where?: string } = {},
): Promise<Confined> {
  const where = opts.where ?? 'genjob serve';
  if (policy.kind === 'bwrap') {
    if (policy.user) requireNodeReachable(policy.user, where);
    if (opts.probeFirst !== false) await requireBwrap(where, policy.user);
    if (!sandboxFilterCovers())
      throw new SandboxUnavailableError(
        where,
        `the sandbox's seccomp filter knows no syscall numbers for this architecture (${process.arch})`,
        'run serve on x86_64 or aarch64, or pass --no-sandbox to run generators unconfined',
      );
    const env = generatorEnv(process.env, policy.envNames, run.jobEnv, SANDBOX_HOME);
    // a sandbox user owns no device node: only root's sandbox needs nodes of its own
    const devices = sandboxIsRoot(policy) ? keptDevices() : undefined;
    return {
      file: 'bwrap',
      args: ['--seccomp', String(FILTER_FD), ...bwrapArgv(policy, { ...run, env, devices })],
      filter: sandboxFilter(),
      // bwrap itself needs only PATH to be found; --clearenv then empties what the generator sees
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      cwd: run.workspace,
      ...asUser(policy.user),
      finish: () => {
        // the generator is PID 1's child in its own namespace: when bwrap is killed or exits, all go
      },
    };
  }
  const tag = randomBytes(12).toString('hex');
  let quiet = false;
  const home = join(run.scratch, 'home');
  nodeFs.mkdirSync(home, { recursive: true });
  if (policy.user) giveTree(home, policy.user);
  const env = { [RUN_TAG_VAR]: tag, ...generatorEnv(process.env, policy.envNames, run.jobEnv, home) };
  return {
    file: 'sh',
    // no process limit unconfined: outside a user namespace of its own the count would be every process of
    // the user on the host, so any other (another job's sandbox among them) could make this run fail to fork
    args: ['-c', run.command],
    env,
    cwd: run.workspace,
    ...asUser(policy.user),
    finish: (pid) => {
      // a sweep reads every process's environment: once more only while the last one found any
      if (!quiet) quiet = sweepRun(tag, pid) === 0;
    },
  };
}
