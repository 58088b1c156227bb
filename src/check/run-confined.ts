// Run one setup or checker command confined exactly like a generator (src/sandbox/confine.ts:
// bubblewrap, the run directory the only writable place, the environment allowlist, no network unless
// the checker asks for it), its stdout and stderr together into a log file capped at MAX_LOG_BYTES.
// The run ends when its first process does, or at the deadline: then every process it started is
// killed (bwrap's PID namespace; without a sandbox, the tagged sweep). What it proves is decided by
// verdict.ts from the facts returned here. bubblewrap is not probed before the run (a bwrap of its own
// for `true`, and a child of this process, at every check): the run's own bwrap either confines the
// command or does not start it, and only a run that could not start asks the probe whether bubblewrap
// can start a sandbox here at all, which refuses the whole check when it cannot (EGJ_SANDBOX_UNAVAILABLE).
import { spawn } from 'node:child_process';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { ioErrorAt } from '../core/errors.js';
import { requireBwrap } from '../sandbox/bwrap-probe.js';
import { confine } from '../sandbox/confine.js';
import type { SandboxPolicy } from '../sandbox/policy.js';
import { sendFilter } from '../sandbox/seccomp.js';
import type { RunFacts } from './verdict.js';

/** Beyond this the log keeps only a note that output was dropped: a check cannot fill the disk. */
export const MAX_LOG_BYTES = 8 * 1024 * 1024;

export interface ConfinedRun {
  command: string;
  /** The run directory (bound writable); `workspace` (the tree) is inside it. */
  runDir: string;
  workspace: string;
  jobEnv: Record<string, string>;
  policy: SandboxPolicy;
  timeoutMs: number;
  log: string;
}

export interface RunResult extends RunFacts {
  ms: number;
  logBytes: number;
}

/** bwrap reports its own failures to start a sandbox as `bwrap: …` and exit 1. */
function sandboxFailure(log: string): string | null {
  const fd = openSync(log, 'r');
  try {
    const head = Buffer.alloc(300);
    const text = head.subarray(0, readSync(fd, head, 0, head.length, 0)).toString('utf8');
    return text.startsWith('bwrap: ') ? `the sandbox could not start: ${text.split('\n')[0]}` : null;
  } finally {
    closeSync(fd);
  }
}

export async function runConfined(r: ConfinedRun): Promise<RunResult> {
  const started = Date.now();
  const confined = await confine(
    r.policy,
    {
      command: r.command,
      scratch: r.runDir,
      workspace: r.workspace,
      readOnly: [],
      jobEnv: r.jobEnv,
    },
    { probeFirst: false, where: 'genjob check' },
  );
  const fd = openSync(r.log, 'w', 0o600);
  let logBytes = 0;
  let dropped = 0;
  // a write the disk refused: kept, and thrown once the run has ended (an output handler must not throw)
  let refused: unknown;
  const write = (chunk: Buffer) => {
    const room = MAX_LOG_BYTES - logBytes;
    if (room <= 0 || refused !== undefined) {
      dropped += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    try {
      writeSync(fd, part);
    } catch (err) {
      refused = err;
      return;
    }
    logBytes += part.length;
    dropped += chunk.length - part.length;
  };
  // an fd's error names no file: these name the log
  const closeLog = () => {
    try {
      closeSync(fd);
    } catch (err) {
      throw ioErrorAt(r.log, err);
    }
  };
  try {
    const facts = await new Promise<RunFacts>((resolve) => {
      const child = spawn(confined.file, confined.args, {
        cwd: confined.cwd,
        env: confined.env,
        // fd 3 carries the seccomp filter to bwrap
        stdio: confined.filter ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
        detached: true,
        // as the sandbox user, when genjob runs as root (sandbox-user.ts)
        ...(confined.uid === undefined ? {} : { uid: confined.uid, gid: confined.gid }),
      });
      if (confined.filter) sendFilter(child.stdio, confined.filter);
      let timedOut = false;
      let exited: { code: number | null; signal: string | null } | undefined;
      const end = () => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // the group is gone already
        }
        confined.finish(child.pid);
      };
      child.stdout?.on('data', write);
      child.stderr?.on('data', write);
      const timer = setTimeout(() => {
        timedOut = true;
        end();
      }, r.timeoutMs);
      // the run ends when its first process does: whatever it left holding our pipes is ended then
      child.once('exit', (code, signal) => {
        exited = { code, signal };
        end();
      });
      child.once('error', (err) => {
        clearTimeout(timer);
        resolve({
          exitCode: null,
          signal: null,
          timedOut: false,
          startFailed: `could not start: ${err.message}`,
        });
      });
      child.once('close', () => {
        clearTimeout(timer);
        resolve({
          exitCode: exited?.code ?? null,
          // our own kill at the deadline is a timeout, not a signal from outside
          signal: timedOut ? null : (exited?.signal ?? null),
          timedOut,
          startFailed: null,
        });
      });
    });
    if (refused !== undefined) throw ioErrorAt(r.log, refused);
    if (dropped > 0) {
      const note = Buffer.from(`\n[genjob: ${dropped} more byte(s) of output dropped]\n`);
      try {
        writeSync(fd, note);
      } catch (err) {
        throw ioErrorAt(r.log, err);
      }
      logBytes += note.length;
    }
    closeLog();
    const failed = facts.exitCode === 1 && r.policy.kind === 'bwrap' ? sandboxFailure(r.log) : null;
    // bwrap missing, or refusing to start a sandbox: the probe says whether any sandbox can start here
    if (r.policy.kind === 'bwrap' && (failed !== null || facts.startFailed !== null))
      await requireBwrap('genjob check', r.policy.user);
    return { ...facts, ...(failed ? { startFailed: failed } : {}), ms: Date.now() - started, logBytes };
  } catch (err) {
    try {
      closeSync(fd);
    } catch {
      // closed already, or failing as the error thrown says
    }
    throw err;
  }
}
