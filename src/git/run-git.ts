// The one way genjob runs git: argv only (no shell), a minimal environment (no GIT_DIR, GIT_INDEX_FILE or
// other GIT_* the caller happened to export, no prompts: GIT_TERMINAL_PROMPT=0, LC_ALL=C so messages
// parse), hooks off (-c core.hooksPath=/dev/null), stdout as bytes with a size cap. node:child_process,
// not execa: `genjob push` with nothing new must stay near `git push`, and execa alone costs ~0.1 s to load.
import { spawn } from 'node:child_process';
import { GitFailedError } from '../core/errors.js';

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
  return { ...env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '', SSH_ASKPASS: '', ...extra };
}

/** Run `git -C cwd -c core.hooksPath=/dev/null ARGS`; throws GitFailedError on a non-zero exit not in okCodes. */
export function git(cwd: string, args: readonly string[], opts: GitOptions = {}): Promise<GitResult> {
  const max = opts.maxOutput ?? MAX_GIT_OUTPUT;
  const argv = ['-C', cwd, ...(opts.userHooksPath ? [] : ['-c', 'core.hooksPath=/dev/null']), ...args];
  return new Promise((resolve, reject) => {
    const child = spawn('git', argv, { env: gitEnv(opts.env), stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let outLen = 0;
    let err = '';
    let tooBig = false;
    child.stdout.on('data', (d: Buffer) => {
      outLen += d.length;
      if (outLen > max) {
        tooBig = true;
        child.kill('SIGKILL');
      } else out.push(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err = (err + d).slice(-64 * 1024);
    });
    child.on('error', (e) => reject(new GitFailedError(args, -1, e.message, { cause: e })));
    child.on('close', (code, signal) => {
      if (tooBig) {
        reject(new GitFailedError(args, -1, `output larger than ${max} bytes; refused`));
        return;
      }
      const c = code ?? (signal ? 128 : -1);
      if (c !== 0 && !(opts.okCodes ?? []).includes(c)) {
        reject(new GitFailedError(args, c, err));
        return;
      }
      resolve({ code: c, stdout: Buffer.concat(out), stderr: err });
    });
    child.stdin.on('error', () => {
      // git may exit before reading all of stdin; its exit code says what happened
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** stdout as text without the final newline. */
export async function gitText(cwd: string, args: readonly string[], opts: GitOptions = {}): Promise<string> {
  return (await git(cwd, args, opts)).stdout.toString('utf8').replace(/\n$/, '');
}
