// Run the generator: a shell command in the workspace, confined as the host's policy says
// (src/sandbox: bubblewrap, or --no-sandbox with the environment allowlist), with GENJOB_INSTRUCTION,
// GENJOB_KEY, GENJOB_JOB and GENJOB_USAGE_FILE. When it exits or times out, every process it
// started is ended. Its stdout never reaches ours (ours is the protocol channel): both of its
// streams are relayed to our stderr, and the last lines of its stderr are kept for the reason.
// The usage file is the generator's to make: it is read without following a link or blocking on a
// FIFO, only when it is a regular file, and never past its size cap.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { execa } from 'execa';
import { lastLines } from '../core/telling-line.js';
import { confine } from '../sandbox/confine.js';
import type { SandboxPolicy } from '../sandbox/policy.js';
import { sendFilter } from '../sandbox/seccomp.js';

export interface GeneratorRun {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Stopped because the worker cancelled the job (`signal` aborted). */
  cancelled: boolean;
  /** Why no process could be started at all (`spawn E2BIG`, say); null when one ran. */
  startError: string | null;
  /** The last lines of its stderr (at most TAIL_LINES, within TAIL_BYTES), oldest first. */
  stderrTail: string;
  ms: number;
  usage?: { prompt_tokens: number; completion_tokens: number; requests: number };
}

const TAIL_BYTES = 2048;
const TAIL_LINES = 40;
/** A usage file larger than this is ignored unread. */
export const USAGE_MAX_BYTES = 64 * 1024;

function tailKeeper() {
  let tail = Buffer.alloc(0);
  let cut = false;
  return {
    push(chunk: Buffer) {
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > TAIL_BYTES) {
        tail = tail.subarray(tail.length - TAIL_BYTES);
        cut = true;
      }
    },
    text: () => lastLines(tail.toString('utf8'), TAIL_LINES, cut).join('\n').trim(),
  };
}

export async function runGenerator(opts: {
  command: string;
  workspace: string;
  env: Record<string, string>;
  timeoutMs: number;
  usageFile: string;
  /** The per-run directory holding the workspace, the job file and the usage file. */
  scratch: string;
  /** Files in scratch the generator may read but not change. */
  readOnly: readonly string[];
  policy: SandboxPolicy;
  /** Aborted when the worker cancels the job: the run is ended as on a timeout. */
  signal?: AbortSignal;
}): Promise<GeneratorRun> {
  const started = Date.now();
  const confined = await confine(opts.policy, {
    command: opts.command,
    scratch: opts.scratch,
    workspace: opts.workspace,
    readOnly: opts.readOnly,
    jobEnv: { ...opts.env, GENJOB_USAGE_FILE: opts.usageFile },
  });
  // an argument or variable Node refuses before any process starts (a NUL in it): no run at all
  const refused = refusedArguments([confined.file, ...confined.args, ...Object.values(confined.env)]);
  if (refused !== null)
    return {
      exitCode: null,
      signal: null,
      timedOut: false,
      cancelled: false,
      startError: refused,
      stderrTail: '',
      ms: 0,
    };
  const child = execa(confined.file, confined.args, {
    cwd: confined.cwd,
    env: confined.env,
    extendEnv: false,
    // fd 3 carries the seccomp filter to bwrap
    stdio: confined.filter ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
    buffer: false,
    reject: false,
    detached: true,
    cleanup: true,
    // as the sandbox user, when genjob runs as root (sandbox-user.ts)
    ...(confined.uid === undefined ? {} : { uid: confined.uid, gid: confined.gid }),
  });
  if (confined.filter) sendFilter(child.stdio, confined.filter);
  const tail = tailKeeper();
  child.stdout?.on('data', (c: Buffer) => process.stderr.write(c));
  child.stderr?.on('data', (c: Buffer) => {
    tail.push(c);
    process.stderr.write(c);
  });
  let timedOut = false;
  const killGroup = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  // the run ends when its first process does: whatever it left behind (holding our pipes open,
  // say) is ended then, not when the pipes close
  child.once('exit', () => {
    killGroup();
    confined.finish(child.pid);
  });
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
    confined.finish(child.pid);
  }, opts.timeoutMs);
  let cancelled = false;
  const onCancel = () => {
    cancelled = true;
    killGroup();
    confined.finish(child.pid);
  };
  if (opts.signal?.aborted) onCancel();
  else opts.signal?.addEventListener('abort', onCancel, { once: true });
  const result = await child;
  clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onCancel);
  killGroup(); // reap anything the generator left running in its group
  confined.finish(child.pid); // and anything that left the group (setpgid, setsid)
  const run: GeneratorRun = {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    timedOut,
    cancelled,
    startError: startErrorOf(result),
    stderrTail: tail.text(),
    ms: Date.now() - started,
  };
  const usage = await readUsage(opts.usageFile);
  if (usage) run.usage = usage;
  return run;
}

/** Why Node would refuse to start a process with these strings (a NUL in one), or null. */
function refusedArguments(strings: readonly string[]): string | null {
  return strings.some((s) => s.includes('\0')) ? 'an argument or variable holds a NUL character' : null;
}

/** What kept a process from starting, when none did: it has neither an exit status nor a signal. */
function startErrorOf(result: {
  exitCode?: number;
  signal?: string;
  code?: string;
  originalMessage?: string;
}) {
  if (result.exitCode !== undefined || result.signal !== undefined) return null;
  const message = result.originalMessage || `spawn ${result.code ?? 'failed'}`;
  return result.code === 'E2BIG'
    ? `${message}: its environment or arguments are longer than Linux starts a program with`
    : message;
}

/** Usage a generator may report in $GENJOB_USAGE_FILE; anything else than a small regular file of JSON is ignored. */
export async function readUsage(path: string): Promise<GeneratorRun['usage']> {
  let text: string;
  try {
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const st = await fh.stat();
      if (!st.isFile() || st.size > USAGE_MAX_BYTES) return undefined;
      const buf = Buffer.alloc(USAGE_MAX_BYTES + 1);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      if (bytesRead > USAGE_MAX_BYTES) return undefined; // it grew after the fstat
      text = buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await fh.close();
    }
  } catch {
    return undefined;
  }
  try {
    const u = JSON.parse(text) as Record<string, unknown>;
    const nat = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : 0);
    return {
      prompt_tokens: nat(u.prompt_tokens),
      completion_tokens: nat(u.completion_tokens),
      requests: nat(u.requests),
    };
  } catch {
    return undefined;
  }
}
