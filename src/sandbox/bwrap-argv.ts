// The bubblewrap command line for one generator run. Mount order matters (later mounts cover
// earlier ones): the system read-only → /etc secrets masked → private /tmp, /proc, /dev →
// user-exposed paths → hidden paths masked (cache, workspaces root, key) → this run's scratch
// directory writable (its job file read-only). The workspace is the only writable place.
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import type { SandboxPolicy } from './policy.js';

/** System directories bound read-only when they exist (a symlink is recreated as one, e.g. /bin → usr/bin). */
export const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];
/** Secrets under /etc that are covered: a directory by an empty tmpfs, a file by /dev/null. */
export const ETC_SECRETS = [
  '/etc/ssh',
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/sudoers',
  '/etc/sudoers.d',
  '/etc/munge',
  '/etc/ssl/private',
  '/etc/genjob',
];
/** HOME inside the sandbox: an empty directory in its private /tmp. */
export const SANDBOX_HOME = '/tmp/home';

export interface BwrapRun {
  /** The per-run directory (workspace files/ inside it, job.json, usage.json): bound writable. */
  scratch: string;
  /** The workspace (cwd of the generator), inside scratch. */
  workspace: string;
  /** Files inside scratch the generator may read but not change. */
  readOnly: readonly string[];
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

/** The directory of the node running genjob, when it lies outside the system directories. */
function nodeDir(): string[] {
  const dir = dirname(process.execPath);
  return SYSTEM_DIRS.some((s) => dir === s || dir.startsWith(`${s}/`)) ? [] : [dir];
}

function mask(path: string): string[] {
  const k = kindOf(path);
  if (k === 'dir') return ['--tmpfs', path];
  if (k === 'file') return ['--ro-bind', '/dev/null', path];
  return [];
}

export function bwrapArgv(policy: SandboxPolicy, run: BwrapRun): string[] {
  const a = ['--unshare-all', '--die-with-parent', '--new-session'];
  if (policy.network) a.push('--share-net');
  for (const d of SYSTEM_DIRS) {
    const k = kindOf(d);
    if (k === 'link') a.push('--symlink', readlinkSync(d), d);
    else if (k === 'dir') a.push('--ro-bind', d, d);
  }
  for (const d of nodeDir()) a.push('--ro-bind', d, d);
  for (const s of ETC_SECRETS) a.push(...mask(s));
  a.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--dir', SANDBOX_HOME);
  for (const p of policy.binds) if (existsSync(p)) a.push('--ro-bind', p, p);
  for (const p of policy.bindsRw) if (existsSync(p)) a.push('--bind', p, p);
  for (const h of policy.hidden) if (coveredByBind(policy, h)) a.push(...mask(h));
  a.push('--bind', run.scratch, run.scratch);
  for (const f of run.readOnly) if (existsSync(f)) a.push('--ro-bind', f, f);
  a.push('--chdir', run.workspace, '--clearenv');
  for (const [k, v] of Object.entries(run.env)) a.push('--setenv', k, v);
  a.push('--', 'sh', '-c', run.command);
  return a;
}

/** A hidden path needs a mask only where an exposed path (or /tmp's, /etc's view) would show it. */
function coveredByBind(policy: SandboxPolicy, hidden: string): boolean {
  const under = (p: string) => hidden === p || hidden.startsWith(p.endsWith('/') ? p : `${p}/`);
  return [...policy.binds, ...policy.bindsRw, ...SYSTEM_DIRS].some(under);
}
