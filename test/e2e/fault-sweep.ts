// Syscall fault injection for the end-to-end I/O tests: run the built CLI under
// `strace -f -y -e inject=SYSCALL:error=ERRNO:when=N`, find where the fault landed (the "(INJECTED)"
// line, with the path strace resolved for its fd or argument), and classify it: inside the repository
// (.gen/ or the tree: genjob's own call sites), in the host's cache (the generator host's side), or
// elsewhere (Node's runtime: loading modules, its eventfd and signal pipe, libuv internals; the shell).
import { cpSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { shellQuote } from '../../src/transport/ssh-options.js';
import { CLI, type CliResult } from './helpers.js';

/** The syscalls Node makes for genjob's file operations (x86-64 names). */
export const SYSCALLS = [
  'openat',
  'write',
  'pwrite64',
  'writev',
  'fsync',
  'rename',
  'link',
  'mkdir',
  'unlink',
  'rmdir',
  'close',
  'fchmod',
  'utimensat',
] as const;
export const ERRNOS = ['ENOSPC', 'EIO', 'EDQUOT', 'EACCES'] as const;
/**
 * The syscalls Node makes to read files, list directories and look at them. A disk that cannot write
 * fails these with EIO; a permission or a security module with EACCES (ENOSPC and EDQUOT are not among
 * their errors).
 */
export const READ_SYSCALLS = [
  'read',
  'pread64',
  'getdents64',
  'statx',
  'newfstatat',
  'fstat',
  'readlink',
  'access',
] as const;
export const READ_ERRNOS = ['EIO', 'EACCES'] as const;

/** The errnos a fault on `syscall` is injected with. */
export function errnosFor(syscall: string): readonly string[] {
  return (READ_SYSCALLS as readonly string[]).includes(syscall) ? READ_ERRNOS : ERRNOS;
}

export type Landing = 'repo' | 'host' | 'elsewhere' | 'missed';

export interface Call {
  pid: number;
  syscall: string;
  /** Invocation number of this syscall in this tracee (what strace's when= counts). */
  n: number;
  /** The paths the call names (arguments and fds resolved by -y). */
  paths: string[];
  /** What its fds are, as -y shows them (a path, `pipe:[…]`, `anon_inode:[eventfd]`): where a fault landed. */
  fds: string[];
  injected: boolean;
  /** For a clone that made a thread of this process (CLONE_THREAD): the new thread's id. */
  thread?: number;
}

/** Parse an strace -f -y log into calls numbered per tracee and syscall. */
export function parseLog(text: string): Call[] {
  const counts = new Map<string, number>();
  const calls: Call[] = [];
  const pending = new Map<number, string>();
  for (const raw of text.split('\n')) {
    const m = /^(\d+)\s+(.*)$/.exec(raw);
    if (!m) continue;
    const pid = Number(m[1]);
    let line = m[2]!;
    // an interrupted call is logged as "<unfinished ...>" then "<... name resumed>"
    if (line.endsWith('<unfinished ...>')) {
      pending.set(pid, line.slice(0, -'<unfinished ...>'.length));
      continue;
    }
    const resumed = /^<\.\.\. (\w+) resumed>(.*)$/.exec(line);
    if (resumed) {
      line = (pending.get(pid) ?? `${resumed[1]}(`) + resumed[2];
      pending.delete(pid);
    }
    const call = /^(\w+)\((.*)$/.exec(line);
    if (!call) continue;
    const syscall = call[1]!;
    const key = `${pid} ${syscall}`;
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    const paths = [
      // an fd resolved by -y (not AT_FDCWD: that is only the working directory, the repository itself)
      ...[...line.matchAll(/(?<!AT_FDCWD)<(\/[^>]*)>/g)].map((x) => x[1]!),
      ...[...line.matchAll(/"(\/[^"]*)"/g)].map((x) => x[1]!),
    ];
    const fds = [...line.matchAll(/(?<!AT_FDCWD)<([^>]*)>/g)].map((x) => x[1]!);
    const thread = /^clone3?$/.test(syscall) && line.includes('CLONE_THREAD') ? /= (\d+)$/.exec(line) : null;
    calls.push({
      pid,
      syscall,
      n,
      paths,
      fds,
      injected: line.includes('(INJECTED)'),
      ...(thread ? { thread: Number(thread[1]) } : {}),
    });
  }
  return calls;
}

export interface Where {
  repo: string;
  cache: string;
}

export function classify(call: Call | undefined, where: Where): Landing {
  if (call === undefined) return 'missed';
  if (call.paths.some((p) => p === where.repo || p.startsWith(`${where.repo}/`))) return 'repo';
  if (call.paths.some((p) => p.startsWith(`${where.cache}/`))) return 'host';
  return 'elsewhere';
}

export interface Traced extends CliResult {
  calls: Call[];
  /** The call the fault landed on first (undefined: the run never reached the invocation). */
  landed: Call | undefined;
  /** The run passed its deadline, or hung on a runtime fault, and every process of it was killed (kill -9 by pid). */
  hung: boolean;
  /** When it was killed, if it hung. */
  hungAfterMs: number;
}

/**
 * A point's hard deadline: no run may hang the sweep (a fault in Node's signal pipe once hung `work` 14 min).
 * A guard against a hang only: far above what a traced run takes on a loaded machine (seconds), since a
 * slow run killed here would count as a hang.
 */
export const DEADLINE_MS = Number(process.env.GENJOB_IOFAULT_DEADLINE_MS ?? 300_000);

/**
 * A run whose fault landed only on Node's runtime (a pipe or eventfd: no call of it named the side swept)
 * and whose trace has not grown for this long is taken as hung at once, not at the deadline: such a hang
 * is excluded either way, and waiting 300 s for it made one sweep a third of the suite's time. A run that
 * was only slow is excluded the same, so this moves no point from failed to passed. 10 s: a traced run
 * that is alive makes a call every few ms (its generators are one-line scripts), and a wait of 30 s was
 * about 20 s of idle core in most sweeps (the host's write#12 on its signal pipe is in most samples).
 */
const IDLE_RUNTIME_HANG_MS = 10_000;

/**
 * Kill -9 every process of a traced run: each tracee by the pid strace logged (first, while strace still
 * holds them), then strace's own process group (a child that made no traced call yet).
 */
function killRun(stracePid: number | undefined, log: string): void {
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    // no log yet: only the group is left to kill
  }
  const pids = new Set([...text.matchAll(/^(\d+) /gm)].map((m) => Number(m[1])));
  for (const pid of [...pids, ...(stracePid ? [-stracePid] : [])]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** strace's argv before the traced command: follow children, resolve fds, log to `log`, inject `fault`. */
function straceArgs(
  log: string,
  fault: { syscall: string; errno: string; n: number } | undefined,
  trace: readonly string[],
): string[] {
  const inject = fault ? ['-e', `inject=${fault.syscall}:error=${fault.errno}:when=${fault.n}`] : [];
  const traceSet = [...new Set([...trace, ...(fault ? [fault.syscall] : [])])].join(',');
  return ['-f', '-y', '-qq', '-o', log, '-e', `trace=${traceSet}`, ...inject];
}

type Fault = { syscall: string; errno: string; n: number };
// clone and clone3 only to tell the process's threads (libuv's pool) from its children
const DEFAULT_TRACE = [...SYSCALLS, ...READ_SYSCALLS, 'clone', 'clone3'];

/** Run the CLI under strace, injecting `errno` into invocation `n` of `syscall` (n = 0: no injection). */
export function traced(
  args: readonly string[],
  opts: { cwd: string; env: Record<string, string>; log: string; where?: Where },
  fault: Fault | undefined,
  trace: readonly string[] = DEFAULT_TRACE,
): Promise<Traced> {
  return runTraced('strace', [...straceArgs(opts.log, fault, trace), process.execPath, CLI, ...args], opts);
}

/**
 * Run the CLI untraced with `--launch` starting the generator host (`genjob serve --session` on
 * `cacheDir`) under strace: the fault lands on the host's side, as on an ssh host whose disk fails.
 */
export function tracedHost(
  args: readonly string[],
  opts: { cwd: string; env: Record<string, string>; log: string; cacheDir: string; where?: Where },
  fault: Fault | undefined,
  trace: readonly string[] = DEFAULT_TRACE,
): Promise<Traced> {
  const serve = [
    'strace',
    ...straceArgs(opts.log, fault, trace),
    process.execPath,
    CLI,
    'serve',
    '--session',
  ];
  const launch = [...serve, '--cache-dir', opts.cacheDir].map(shellQuote).join(' ');
  return runTraced(process.execPath, [CLI, ...args, '--launch', launch], opts);
}

/** True when every injected call of the log so far lands outside `side` (on the runtime, or nowhere swept). */
function faultOnRuntimeOnly(log: string, where: Where): boolean {
  let text: string;
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return false;
  }
  const injected = parseLog(text).filter((c) => c.injected);
  return injected.length > 0 && injected.every((c) => classify(c, where) === 'elsewhere');
}

async function runTraced(
  file: string,
  argv: readonly string[],
  opts: { cwd: string; env: Record<string, string>; log: string; where?: Where },
): Promise<Traced> {
  const run = execa(file, argv, {
    cwd: opts.cwd,
    env: { ...opts.env, GENJOB_DEBUG: '' },
    reject: false,
    stripFinalNewline: false,
    // its own process group, so that the deadline can kill what strace's tracees started
    detached: true,
  });
  let hung = false;
  const deadline = setTimeout(() => {
    hung = true;
    killRun(run.pid, opts.log);
  }, DEADLINE_MS);
  // a run hung on a runtime fault: its trace stops growing (see IDLE_RUNTIME_HANG_MS)
  let size = -1;
  let idleSince = Date.now();
  const started = Date.now();
  let hungAfterMs = DEADLINE_MS;
  const idle = opts.where
    ? setInterval(() => {
        let now = -1;
        try {
          now = statSync(opts.log).size;
        } catch {
          // no log yet
        }
        if (now !== size) {
          size = now;
          idleSince = Date.now();
        } else if (
          !hung &&
          Date.now() - idleSince >= IDLE_RUNTIME_HANG_MS &&
          opts.where &&
          faultOnRuntimeOnly(opts.log, opts.where)
        ) {
          hung = true;
          hungAfterMs = Date.now() - started;
          killRun(run.pid, opts.log);
        }
      }, 1000)
    : undefined;
  const r = await run.finally(() => {
    clearTimeout(deadline);
    clearInterval(idle);
  });
  let text = '';
  try {
    text = readFileSync(opts.log, 'utf8');
  } catch {
    // a host that was never launched wrote no log
  }
  const calls = parseLog(text);
  return {
    exitCode: r.exitCode,
    stdout: String(r.stdout),
    stderr: String(r.stderr),
    calls,
    landed: calls.find((c) => c.injected),
    hung,
    hungAfterMs,
  };
}

/**
 * The points of a probe run worth injecting: each syscall invocation of the traced main thread (the CLI,
 * or the host's serve) that names a path on `side` (the repository, or the host's cache). With
 * `threads`, also those of the process's other threads (libuv's pool runs every fs/promises call):
 * strace's when= counts per thread, so such a point fails the n-th call of that syscall in every
 * thread, the one that named the path among them; where it landed is read back as for any point.
 */
export function probePoints(
  probe: Traced,
  where: Where,
  side: 'repo' | 'host' = 'repo',
  opts: { threads?: boolean } = {},
): Array<{ syscall: string; n: number; path: string }> {
  const main = probe.calls[0]?.pid;
  const mine = new Set(main === undefined ? [] : [main]);
  if (opts.threads) for (const c of probe.calls) if (c.thread && mine.has(c.pid)) mine.add(c.thread);
  const root = side === 'repo' ? where.repo : where.cache;
  const seen = new Set<string>();
  return probe.calls
    .filter((c) => mine.has(c.pid) && classify(c, where) === side)
    .filter((c) => !seen.has(`${c.syscall}#${c.n}`) && seen.add(`${c.syscall}#${c.n}`))
    .map((c) => ({ syscall: c.syscall, n: c.n, path: c.paths.find((p) => p.startsWith(root))! }));
}

/** Copy a prepared sandbox (repository, host cache, scripts) to `to`. */
export function cloneSandbox(from: string, to: string): void {
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true, verbatimSymlinks: true });
}

/** Leftovers nothing may keep after a clean re-run: temps, staging dirs, tree temps, lock intents. */
export function leftovers(repo: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (r === '.git') continue;
      if (
        d.name.startsWith('.tmp-') ||
        d.name.startsWith('.genjob-tmp-') ||
        d.name.startsWith('.extract-') ||
        d.name.includes('.taking-')
      )
        found.push(r);
      else if (d.isDirectory()) walk(join(dir, d.name), r);
    }
  };
  walk(repo, '');
  return found;
}
