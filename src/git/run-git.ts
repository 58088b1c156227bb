// The one way genjob runs git: argv only (no shell), a minimal environment (no GIT_DIR, GIT_INDEX_FILE or
// other GIT_* the caller happened to export, no prompts: GIT_TERMINAL_PROMPT=0, LC_ALL=C so messages
// parse), replace refs ignored (GIT_NO_REPLACE_OBJECTS=1: git honours refs/replace/* by default, so one
// would make every read see another commit, tree or parent list than the object a push sends or a merge
// takes), hooks off (-c core.hooksPath=/dev/null), stdout as bytes with a size cap. node:child_process,
// not execa: `genjob push` with nothing new must stay near `git push`, and execa alone costs ~0.1 s to load.
// Several commands in a row that need nothing from Node between them run as one `sh` (gitSteps): Node
// starts a child by forking itself, which costs it several ms at a command's heap, where sh forks in a
// fraction of one.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { GitFailedError, GitTimedOutError } from '../core/errors.js';
import { RUN_TAG_VAR, sweepRun } from '../core/process-sweep.js';

/** Variables passed through from the caller: identity, ssh, HOME for the user's own config and keys. */
const PASS = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'TMPDIR',
  'XDG_CONFIG_HOME',
  'SSH_AUTH_SOCK',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_SSH_VARIANT',
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_NOSYSTEM',
];

export const MAX_GIT_OUTPUT = 256 * 1024 * 1024;

export interface GitOptions {
  /** Bytes written to git's stdin. */
  input?: string | Uint8Array;
  /** Extra environment (e.g. GIT_INDEX_FILE for a temporary index, fixed dates for fast-import). */
  env?: Record<string, string>;
  /** Exit codes that are answers, not failures (e.g. 1 from `diff --quiet`). */
  okCodes?: readonly number[];
  /** Refuse output larger than this (hostile remotes can name huge trees). */
  maxOutput?: number;
  /** Leave core.hooksPath as configured (only to ask git where the hooks live). */
  userHooksPath?: boolean;
  /**
   * Stop git after this many ms: git and every process it started (the ssh, index-pack...) are killed, so
   * a remote that stalls cannot hold a hook for ever; the promise then rejects with GitTimedOutError. git
   * stays in this process's session and process group, so ssh keeps the terminal to ask for a passphrase
   * or a host key and a Ctrl-C reaches it; what it started is found by a tag in its environment
   * (src/core/process-sweep.ts). A SIGINT, SIGTERM or SIGHUP sent to genjob alone meanwhile kills them too.
   */
  timeoutMs?: number;
  /**
   * The largest file git and every process it starts may write (RLIMIT_FSIZE, set by `ulimit -f` in
   * 512-byte blocks, so rounded up to one): a write past it kills the writer with SIGXFSZ.
   */
  maxFileBytes?: number;
}

export interface GitResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASS) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  return {
    ...env,
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    GIT_NO_REPLACE_OBJECTS: '1',
    ...extra,
  };
}

/** Run `git -C cwd -c core.hooksPath=/dev/null ARGS`; throws GitFailedError on a non-zero exit not in okCodes. */
export function git(cwd: string, args: readonly string[], opts: GitOptions = {}): Promise<GitResult> {
  const argv = ['-C', cwd, ...(opts.userHooksPath ? [] : ['-c', 'core.hooksPath=/dev/null']), ...args];
  if (opts.maxFileBytes === undefined) return runChild('git', argv, () => args, opts);
  // POSIX counts `ulimit -f` in 512-byte blocks (dash, and bash as sh)
  const blocks = String(Math.max(1, Math.ceil(opts.maxFileBytes / 512)));
  return runChild(
    'sh',
    ['-c', 'ulimit -f "$1" && shift && exec git "$@"', 'sh', blocks, ...argv],
    () => args,
    opts,
  );
}

/** One step of gitSteps: git's arguments, and optionally a file its stdin is read from instead of the sh's. */
export type GitStep = readonly string[] | { readonly args: readonly string[]; readonly stdinFile: string };

const stepArgs = (step: GitStep | undefined): readonly string[] =>
  step === undefined ? [] : 'args' in step ? step.args : step;

/**
 * Run git commands one after another, each as `git -C cwd -c core.hooksPath=/dev/null STEP`, stopping at
 * the first that fails, in one `sh` (one child of this process instead of one per command). Every step
 * sees the same environment and stdin (give `input` only to steps of which one reads it; a step given a
 * `stdinFile` reads that file instead), and their stdout is one stream, in order. The arguments (and a
 * step's stdin file) reach git as they are: the script names them only as positional parameters, never as
 * text. A failure is reported with the failing step's arguments and exit code.
 */
export function gitSteps(
  cwd: string,
  steps: ReadonlyArray<GitStep>,
  opts: Omit<GitOptions, 'userHooksPath' | 'okCodes'> = {},
): Promise<GitResult> {
  const params: string[] = [cwd];
  const ref = (arg: string) => {
    params.push(arg);
    return `"\${${params.length}}"`;
  };
  const lines = steps.map((step, i) => {
    const refs = stepArgs(step).map(ref);
    const from = 'stdinFile' in step ? ` < ${ref(step.stdinFile)}` : '';
    // the failing step's number goes out on fd 3, so the error names that step, not the script
    return `git -C "$1" -c core.hooksPath=/dev/null ${refs.join(' ')}${from} || { s=$?; echo ${i} >&3; exit $s; }`;
  });
  return runChild(
    'sh',
    ['-c', lines.join('\n'), 'sh', ...params],
    (failed) => stepArgs(steps[failed ?? 0]),
    opts,
    true,
  );
}

/**
 * Start `cmd argv` with git's environment, stdout capped at opts.maxOutput, and settle as git() does;
 * `argsOf` names the command in an error (for gitSteps, given the number of the step that failed, read
 * from the child's fd 3 when `stepFd`).
 */
function runChild(
  cmd: string,
  argv: readonly string[],
  argsOf: (failedStep?: number) => readonly string[],
  opts: GitOptions,
  stepFd = false,
): Promise<GitResult> {
  const max = opts.maxOutput ?? MAX_GIT_OUTPUT;
  // bounded in time: every process git starts inherits the tag, by which the sweep finds it
  const tag = opts.timeoutMs !== undefined ? randomBytes(12).toString('hex') : undefined;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, {
      env: { ...gitEnv(opts.env), ...(tag ? { [RUN_TAG_VAR]: tag } : {}) },
      stdio: stepFd ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    });
    let timedOut = false;
    const stop =
      tag !== undefined
        ? watchRun(child.pid, tag, opts.timeoutMs!, () => {
            timedOut = true;
            for (const s of child.stdio) s?.destroy();
          })
        : () => {};
    const out: Buffer[] = [];
    let outLen = 0;
    let err = '';
    let step = '';
    let tooBig = false;
    child.stdout!.on('data', (d: Buffer) => {
      outLen += d.length;
      if (outLen > max) {
        tooBig = true;
        child.kill('SIGKILL');
      } else out.push(d);
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err = (err + d).slice(-64 * 1024);
    });
    if (stepFd)
      (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (d: string) => {
        step = (step + d).slice(-16);
      });
    const failedArgs = () => argsOf(/^\d+\n$/.test(step) ? Number(step) : undefined);
    child.on('error', (e) => {
      stop();
      reject(new GitFailedError(failedArgs(), -1, e.message, { cause: e }));
    });
    // killed for its time: settled once git is gone (a process that escaped the sweep may hold the pipes open)
    child.on('exit', () => {
      stop();
      if (timedOut) reject(new GitTimedOutError(failedArgs(), opts.timeoutMs!));
    });
    child.on('close', (code, signal) => {
      if (timedOut) return;
      if (tooBig) {
        reject(new GitFailedError(failedArgs(), -1, `output larger than ${max} bytes; refused`));
        return;
      }
      const c = code ?? (signal ? 128 : -1);
      if (c !== 0 && !(opts.okCodes ?? []).includes(c)) {
        reject(new GitFailedError(failedArgs(), c, err));
        return;
      }
      resolve({ code: c, stdout: Buffer.concat(out), stderr: err });
    });
    child.stdin!.on('error', () => {
      // git may exit before reading all of stdin; its exit code says what happened
    });
    child.stdin!.end(opts.input ?? '');
  });
}

/**
 * Kill the processes of a run (`pid`, its descendants, every process carrying `tag`) after `ms` (calling
 * `expired` after), or when this process is told to stop (SIGINT, SIGTERM, SIGHUP: one sent to genjob alone,
 * by `kill` or a CI runner, reaches none of them), which is then re-raised. Returns what ends the watch once
 * the child has exited.
 */
function watchRun(pid: number | undefined, tag: string, ms: number, expired: () => void): () => void {
  const timer = setTimeout(() => {
    sweepRun(tag, pid);
    expired();
  }, ms);
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const onSignal = (sig: NodeJS.Signals) => {
    sweepRun(tag, pid);
    end();
    process.kill(process.pid, sig);
  };
  const end = () => {
    clearTimeout(timer);
    for (const s of signals) process.off(s, onSignal);
  };
  if (pid === undefined) return end; // never started: 'error' follows
  for (const s of signals) process.once(s, onSignal);
  return end;
}

/** stdout as text without the final newline. */
export async function gitText(cwd: string, args: readonly string[], opts: GitOptions = {}): Promise<string> {
  return (await git(cwd, args, opts)).stdout.toString('utf8').replace(/\n$/, '');
}
