// The bubblewrap command line for one generator run. Namespaces first: a user namespace even for root,
// all capabilities dropped and no nested user namespace, so root inside owns no inherited mount (they
// are locked) and can neither unmount a mask nor remount anything writable. Mount order matters
// (later mounts cover earlier ones): the system read-only, the worker's repository masked in it →
// /proc (read-only), /dev (read-only, its /dev/shm bounded), a bounded private /tmp → exposed paths →
// every hidden path masked wherever a view shows it, by real path (cache, workspaces root, key, /etc
// secrets, and in root's sandbox what only root may read in /etc) → this run's scratch writable, its
// workspace bound onto itself (a mount point cannot be renamed or removed, so the generator cannot swap it
// for a link) → its read-only files → every mask's tmpfs and the sandbox's root read-only. Whoever it runs
// as, the command's shell first lowers its process limit (sandbox-user.ts).
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DEVICES } from './device-nodes.js';
import { ETC_SECRETS } from './exposure.js';
import { type SandboxPolicy, sandboxIsRoot } from './policy.js';
import { realPath, rebase, within } from './real-path.js';
import { rootOnlyPaths } from './root-only.js';
import { limitProcesses, type SandboxUser, unreachable } from './sandbox-user.js';
import { SHM_BYTES, tmpBytes } from './tmpfs-limits.js';

export { ETC_SECRETS } from './exposure.js';

/** System directories bound read-only when they exist (a symlink is recreated as one, e.g. /bin → usr/bin). */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];
/**
 * Files of the sandbox's /proc that show what is not its own, masked by /dev/null (unreadable on a
 * nodev mount). /proc/keys lists every key of serve's user and login session (type, owner,
 * description): the keyring the seccomp filter keeps out of reach, named key by key (Docker masks it too).
 */
export const PROC_MASKED = ['/proc/keys'];
/** HOME inside the sandbox: an empty directory in its private /tmp. */
export const SANDBOX_HOME = '/tmp/home';
/**
 * How every sandbox starts, the probe's included (bwrap-probe.ts): its own namespaces of every kind, a
 * user namespace even in root's sandbox, no capability, no user namespace inside it; it dies with
 * serve and has its own session (no TIOCSTI into serve's terminal).
 */
export const NAMESPACE_FLAGS = [
  '--unshare-all',
  '--unshare-user',
  '--disable-userns',
  '--cap-drop',
  'ALL',
  '--die-with-parent',
  '--new-session',
];

export interface BwrapRun {
  /** The per-run directory (workspace files/ inside it, job.json, usage.json): bound writable. */
  scratch: string;
  /** The workspace (cwd of the generator), inside scratch. */
  workspace: string;
  /** Files the generator may read but not change (the job file; the generator's own script). */
  readOnly: readonly string[];
  /** Root's sandbox: device nodes of genjob's own (device-nodes.ts), bound over the host's. */
  devices?: string;
  env: Record<string, string>;
  command: string;
}

function kindOf(path: string): 'dir' | 'file' | 'link' | undefined {
  try {
    const st = lstatSync(path);
    return st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : 'file';
  } catch /* Stryker disable next-line BlockStatement: an emptied catch block returns undefined all the same */ {
    return undefined;
  }
}

/** The directory of the node running genjob, when it lies outside the system directories: every sandbox shows it. */
export function nodeDir(): string[] {
  const dir = dirname(process.execPath);
  return SYSTEM_DIRS.some((s) => dir === s || dir.startsWith(`${s}/`)) ? [] : [dir];
}

/** A place where the sandbox shows a host directory: at `at`, the files really at `real`. */
interface View {
  at: string;
  real: string;
  writable: boolean;
}

/** Cover `at`, which shows the file or directory really at `real`. */
function mask(at: string, real: string): string[] {
  const k = kindOf(real);
  if (k === 'dir') return ['--tmpfs', at];
  if (k === 'file') return ['--ro-bind', '/dev/null', at];
  return [];
}

/**
 * Every hidden path, wherever a view shows it (to a sandbox user: one it may reach): masked at its place in that view, and in a writable view
 * each directory on the way to it bound onto itself first, so the generator cannot rename a parent
 * away and put a directory of its own in the mask's place (not the root of another view, a mount
 * point already, nor a directory in a read-only view). A view that lies inside a hidden path is
 * masked whole (serve refuses such a bind; this holds even if it did not). A hidden path inside
 * another is covered by it.
 */
function masks(views: readonly View[], hidden: readonly string[], user?: SandboxUser): string[] {
  const out: string[] = [];
  const done = new Set<string>();
  const add = (args: string[]) => {
    const at = args.at(-1)!;
    if (done.has(at)) return;
    done.add(at);
    out.push(...args);
  };
  // only what is there is masked (a path that does not exist shows nothing), and, for a sandbox user,
  // only what it may reach: behind a directory it may not search, the host's modes hide it, and bwrap,
  // started as that user, could not reach the place to mount a mask
  const reals = [...new Set(hidden.map(realPath))].filter(
    (r) => mask(r, r).length > 0 && (user === undefined || unreachable(dirname(r), user) === null),
  );
  const outermost = reals.filter((r) => !reals.some((o) => o !== r && within(r, o)));
  const fixed = (at: string) => views.some((w) => at === w.at || (!w.writable && within(at, w.at)));
  for (const real of outermost) {
    for (const v of views) {
      if (within(v.real, real)) add(mask(v.at, v.real));
      else if (within(real, v.real)) {
        const pins: string[][] = [];
        for (let d = dirname(real); d !== v.real; d = dirname(d)) {
          const at = rebase(d, v.real, v.at);
          if (v.writable && !fixed(at)) pins.unshift(['--bind', at, at]);
        }
        for (const p of pins) add(p);
        add(mask(rebase(real, v.real, v.at), real));
      }
    }
  }
  return out;
}

/** Where `args` (masks) mount a tmpfs. */
function tmpfsTargets(args: readonly string[]): string[] {
  return args.flatMap((arg, i) => (arg === '--tmpfs' ? [args[i + 1]!] : []));
}

export function bwrapArgv(policy: SandboxPolicy, run: BwrapRun): string[] {
  const a = [...NAMESPACE_FLAGS];
  if (policy.network) a.push('--share-net');
  const views: View[] = [];
  for (const d of SYSTEM_DIRS) {
    const k = kindOf(d);
    if (k === 'link') a.push('--symlink', readlinkSync(d), d);
    else if (k === 'dir') {
      a.push('--ro-bind', d, d);
      views.push({ at: d, real: realPath(d), writable: false });
    }
  }
  for (const d of nodeDir()) {
    a.push('--ro-bind', d, d);
    views.push({ at: d, real: realPath(d), writable: false });
  }
  // before anything is exposed, which then shows on top
  const early = masks(views, policy.masked ?? [], policy.user);
  a.push(...early);
  // /proc read-only: in root's sandbox, root inside is the host's uid 0 (no capability, but the kernel lets
  // uid 0 write /proc/sys by its file modes alone, and bwrap leaves /proc/sys writable then): core_pattern
  // would run a program of the generator's as real root, outside every namespace
  a.push('--proc', '/proc', '--remount-ro', '/proc');
  for (const f of PROC_MASKED) if (existsSync(f)) a.push('--ro-bind', '/dev/null', f);
  // a tmpfs is the host's memory: /dev/shm and /tmp bounded, /dev itself read-only (tmpfs-limits.ts)
  a.push('--dev', '/dev');
  // root's sandbox: device nodes of genjob's own over the host's, which root inside owns (device-nodes.ts)
  if (run.devices) for (const [n] of DEVICES) a.push('--dev-bind', join(run.devices, n), `/dev/${n}`);
  a.push('--size', String(SHM_BYTES), '--tmpfs', '/dev/shm', '--remount-ro', '/dev');
  a.push('--size', String(tmpBytes()), '--tmpfs', '/tmp', '--dir', SANDBOX_HOME);
  const systemViews = views.length;
  for (const [paths, flag, writable] of [
    [policy.binds, '--ro-bind', false],
    [policy.bindsRw, '--bind', true],
  ] as const) {
    for (const p of paths) {
      if (!existsSync(p)) continue;
      a.push(flag, p, p);
      views.push({ at: p, real: realPath(p), writable });
    }
  }
  // root's sandbox: what under /etc only root may read too (root-only.ts): root inside matches its owner
  const rootOnly = sandboxIsRoot(policy) ? rootOnlyPaths() : [];
  const hiding = masks(views, [...ETC_SECRETS, ...rootOnly, ...policy.hidden], policy.user);
  a.push(...hiding);
  a.push('--bind', run.scratch, run.scratch);
  a.push('--bind', run.workspace, run.workspace);
  for (const f of run.readOnly) if (existsSync(f)) a.push('--ro-bind', f, f);
  // each mask that is a tmpfs read-only, last (a later mount point may lie in one): an empty directory
  // to hide a path, not the host's memory to fill (tmpfs-limits.ts). A mask of the worker's repository
  // that an exposed path covers is out of sight already, and no longer a mount point there.
  const exposed = views.slice(systemViews);
  const shown = tmpfsTargets(early).filter((at) => !exposed.some((v) => within(at, v.at)));
  for (const at of [...shown, ...tmpfsTargets(hiding)]) a.push('--remount-ro', at);
  // the sandbox's own root (a tmpfs holding the mount points) read-only: nothing to write beside them
  a.push('--remount-ro', '/', '--chdir', run.workspace, '--clearenv');
  for (const [k, v] of Object.entries(run.env)) a.push('--setenv', k, v);
  // every run its own process limit (sandbox-user.ts): the sandbox user's, or genjob's own user's when it
  // is not root (root's sandbox is exempt: uid 0 is not held by RLIMIT_NPROC)
  a.push('--', 'sh', '-c', limitProcesses(run.command));
  return a;
}
