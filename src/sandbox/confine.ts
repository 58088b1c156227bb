// How one generator command is started under the host's policy: inside bubblewrap (own
// namespaces, the scratch directory the only writable place, an allowlisted environment, the kernel
// keyring refused by a seccomp filter: seccomp.ts), or with
// --no-sandbox as a plain `sh -c` with the same allowlist and a tag that lets us sweep every
// process it started when the run ends. The only entry point remote/run-generator.ts uses.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SandboxUnavailableError } from '../core/errors.js';
import { nodeFs } from '../store/fs-port.js';
import { bwrapArgv, SANDBOX_HOME } from './bwrap-argv.js';
import { requireBwrap } from './bwrap-probe.js';
import { keptDevices } from './device-nodes.js';
import { generatorEnv } from './env-allowlist.js';
import type { SandboxPolicy } from './policy.js';
import { FILTER_FD, keyringFilter, keyringFilterCovers } from './seccomp.js';
import { RUN_TAG_VAR, sweepRun } from './sweep.js';

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
}

/**
 * `probeFirst: false` starts bubblewrap without asking the probe first (bwrap-probe.ts): the caller asks it
 * only when the run could not start (check: run-confined.ts). Either way bubblewrap runs the command confined
 * or not at all.
 */
export async function confine(
  policy: SandboxPolicy,
  run: ConfineRun,
  opts: { probeFirst?: boolean } = {},
): Promise<Confined> {
  if (policy.kind === 'bwrap') {
    if (opts.probeFirst !== false) await requireBwrap('genjob serve');
    if (!keyringFilterCovers())
      throw new SandboxUnavailableError(
        'genjob serve',
        `the sandbox's seccomp filter knows no syscall numbers for this architecture (${process.arch})`,
        'run serve on x86_64 or aarch64, or pass --no-sandbox to run generators unconfined',
      );
    const env = generatorEnv(process.env, policy.envNames, run.jobEnv, SANDBOX_HOME);
    const devices = process.geteuid?.() === 0 ? keptDevices() : undefined;
    return {
      file: 'bwrap',
      args: ['--seccomp', String(FILTER_FD), ...bwrapArgv(policy, { ...run, env, devices })],
      filter: keyringFilter(),
      // bwrap itself needs only PATH to be found; --clearenv then empties what the generator sees
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      cwd: run.workspace,
      finish: () => {
        // the generator is PID 1's child in its own namespace: when bwrap is killed or exits, all go
      },
    };
  }
  const tag = randomBytes(12).toString('hex');
  let quiet = false;
  const home = join(run.scratch, 'home');
  nodeFs.mkdirSync(home, { recursive: true });
  const env = { [RUN_TAG_VAR]: tag, ...generatorEnv(process.env, policy.envNames, run.jobEnv, home) };
  return {
    file: 'sh',
    args: ['-c', run.command],
    env,
    cwd: run.workspace,
    finish: (pid) => {
      // a sweep reads every process's environment: once more only while the last one found any
      if (!quiet) quiet = sweepRun(tag, pid) === 0;
    },
  };
}
