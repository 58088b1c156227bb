// Who a sandbox is to the kernel. Root inside bubblewrap is the host's uid 0 without capabilities, and
// that is still a great deal: the owner of every root-only file a view shows (/usr, /opt, an exposed
// path), the owner of a setuid-root file it writes into a writable bind (nosuid inside, not on the host),
// and a uid RLIMIT_NPROC does not hold (a fork bomb ran until --timeout). So serve and check, run as root,
// start bubblewrap itself (and, with --no-sandbox, the command) as an unprivileged user: `nobody` unless
// --sandbox-user names another, or `root` to keep root's sandbox on purpose. Node's spawn sets the uid and
// gid and clears the supplementary groups (libuv calls setgroups(0)) before bubblewrap starts, so bubblewrap
// runs unprivileged and the sandboxed program is that uid on the host. What bubblewrap binds must then be
// reachable by that uid (every directory on the way searchable), and the run's own directory its own.
import {
  chmodSync,
  type Dirent,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ioErrorAt, SandboxUnavailableError, UsageError } from '../core/errors.js';
import { pidAlive } from '../store/process-identity.js';
import { removeTree } from '../store/remove-tree.js';
import { realPath } from './real-path.js';

export interface SandboxUser {
  uid: number;
  gid: number;
  /** How messages name it: `nobody (65534:65534)`. */
  label: string;
}

/** The sandbox user of a root genjob that names none. */
const DEFAULT_SANDBOX_USER = 'nobody';
/** nobody's ids where /etc/passwd has no `nobody` (the kernel's overflow uid and gid). */
const NOBODY_IDS = 65534;

/**
 * The process limit (RLIMIT_NPROC, soft and hard) of every sandboxed run. Set by the run's own shell inside
 * the sandbox's user namespace, where the kernel counts that namespace's processes (and threads) against
 * it: each run has its own limit, a fork bomb in one leaves the others their own. An unconfined run
 * (--no-sandbox) gets none: there the count is every process of the user on the host, other runs' sandboxes
 * included. Root's sandbox (--sandbox-user root) is not held by it: uid 0 is exempt.
 */
export const SANDBOX_NPROC = 4096;

/** `command`, run by `sh -c`, once the shell has lowered its process limit (dash: ulimit -p; bash: -u). */
export function limitProcesses(command: string): string {
  // on the same line as the command: a message naming a line of the command names the same line
  return `ulimit -p ${SANDBOX_NPROC} 2>/dev/null || ulimit -u ${SANDBOX_NPROC} || exit 126; ${command}`;
}

interface PasswdEntry {
  uid: number;
  gid: number;
}

function passwdEntry(name: string, file = '/etc/passwd'): PasswdEntry | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4 && /^\d+$/.test(f[2]!) && /^\d+$/.test(f[3]!))
      return { uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

const ID = /^\d{1,10}$/;

/**
 * The user a sandbox runs as, from --sandbox-user (USER, UID, USER:GID or UID:GID), or undefined when it
 * runs as genjob's own user: genjob is not root, or --sandbox-user root keeps root's sandbox. A root
 * genjob given none takes `nobody`. Not root, only its own user may be named: no other can be taken.
 */
export function sandboxUser(
  spec: string | undefined,
  euid: number = process.geteuid?.() ?? -1,
  passwd = '/etc/passwd',
): SandboxUser | undefined {
  if (spec === undefined && euid !== 0) return undefined;
  const given = spec ?? DEFAULT_SANDBOX_USER;
  const flag = `--sandbox-user ${JSON.stringify(given)}`;
  const [who = '', group, ...rest] = given.split(':');
  if (who === '' || rest.length > 0 || (group !== undefined && !ID.test(group)))
    throw new UsageError('EGJ_USAGE', `${flag}: give USER, UID, USER:GID or UID:GID`);
  let ids: PasswdEntry | undefined;
  if (ID.test(who)) {
    const uid = Number(who);
    ids = { uid, gid: group === undefined ? uid : Number(group) };
  } else {
    ids = passwdEntry(who, passwd);
    if (ids === undefined && spec === undefined) ids = { uid: NOBODY_IDS, gid: NOBODY_IDS };
    if (ids === undefined) throw new UsageError('EGJ_USAGE', `${flag}: no such user in ${passwd}`);
    if (group !== undefined) ids = { uid: ids.uid, gid: Number(group) };
  }
  const { uid, gid } = ids;
  if (uid > 0xfffffffe || gid > 0xfffffffe) throw new UsageError('EGJ_USAGE', `${flag}: not a user id`);
  if (euid !== 0) {
    if (uid === euid) return undefined;
    throw new UsageError(
      'EGJ_USAGE',
      `${flag}: genjob runs as uid ${euid}, not root, so its sandbox runs as that user; only a genjob run as root starts its sandbox as another`,
    );
  }
  if (uid === 0) return undefined; // root's sandbox, asked for by name
  if (gid === 0)
    throw new UsageError(
      'EGJ_USAGE',
      `${flag}: group 0 is root's; a sandbox in it reads what root's group may: name another group (USER:GID)`,
    );
  return { uid, gid, label: `${ID.test(who) ? 'uid' : who} (${uid}:${gid})` };
}

/** Whether the mode of `st` lets `user` (no supplementary group) do `bit` (4 read, 1 search). */
function permits(st: { uid: number; gid: number; mode: number }, user: SandboxUser, bit: number): boolean {
  const shift = st.uid === user.uid ? 6 : st.gid === user.gid ? 3 : 0;
  return ((st.mode >> shift) & bit) === bit;
}

/**
 * The first directory on the way to `path` (itself included, when a directory) that `user` may not
 * search, as its real path; null when the user reaches it, or it does not exist. Its mode bits decide
 * (an ACL is not read): what bubblewrap, run as that user, will be refused.
 */
export function unreachable(path: string, user: SandboxUser): string | null {
  const parts = realPath(path)
    .split('/')
    .filter((p) => p !== '');
  for (let i = 0; i <= parts.length; i++) {
    const at = `/${parts.slice(0, i).join('/')}`;
    const st = statSync(at, { throwIfNoEntry: false });
    if (st === undefined) return null;
    if (st.isDirectory() && !permits(st, user, 1)) return at;
  }
  return null;
}

/** Why `user` cannot read the file `path` (a program the sandbox runs), or null. */
export function unreadable(path: string, user: SandboxUser): string | null {
  const blocked = unreachable(path, user);
  if (blocked !== null) return `${blocked} is not searchable by ${user.label}`;
  const st = statSync(path, { throwIfNoEntry: false });
  return st === undefined || permits(st, user, 4) ? null : `${path} is not readable by ${user.label}`;
}

/**
 * Hand the tree at `dir` to `user`: `dir` and everything beneath it, each name chowned itself (lchown:
 * a link is never followed). Called on a tree genjob just made, before any sandbox has run in it.
 */
export function giveTree(dir: string, user: SandboxUser): void {
  try {
    lchownSync(dir, user.uid, user.gid);
  } catch (err) {
    throw ioErrorAt(dir, err);
  }
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    throw ioErrorAt(dir, err);
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) giveTree(path, user);
    else
      try {
        lchownSync(path, user.uid, user.gid);
      } catch (err) {
        throw ioErrorAt(path, err);
      }
  }
}

/**
 * Where serve, run as root, makes each run's directory for `user` (its workspace, job file, usage file).
 * `preferred`, serve's work directory beside its cache, when the user can reach it: made searchable but
 * not listable by others (0711; each run's directory in it is the user's own, 0700, and an entry being
 * built root's, 0700). Otherwise (a cache in root's home, which no other user may search) one directory
 * per process in the system's temporary directory (TMPDIR, else /tmp), made private by mkdtemp (no other
 * user can have made or linked it; named by the pid, so the next serve removes one a killed serve left), 0711
 * too, and removed when the process exits. serve decides it once, when it starts.
 */
export function userRunsDir(user: SandboxUser, opts: { preferred?: string } = {}): string {
  if (opts.preferred !== undefined && unreachable(dirname(opts.preferred), user) === null) {
    try {
      mkdirSync(opts.preferred, { recursive: true, mode: 0o700 });
      chmodSync(opts.preferred, 0o711);
    } catch (err) {
      throw ioErrorAt(opts.preferred, err);
    }
    return opts.preferred;
  }
  const base = tmpdir();
  const blocked = unreachable(base, user);
  if (blocked !== null)
    throw new SandboxUnavailableError(
      'genjob serve',
      `each run's directory is made in the temporary directory ${base}, and the sandbox user ${user.label} cannot reach it (${blocked} is not searchable by it)`,
      'set TMPDIR to a directory every user may search (/tmp), or pass --sandbox-user root',
    );
  sweepDeadRuns(base);
  let dir: string;
  try {
    dir = mkdtempSync(join(base, `${RUNS_PREFIX}${process.pid}-`));
    chmodSync(dir, 0o711);
  } catch (err) {
    throw ioErrorAt(join(base, `${RUNS_PREFIX}*`), err);
  }
  process.once('exit', () => {
    try {
      removeTree(dir);
    } catch {
      // the next serve's sweep takes it
    }
  });
  return dir;
}

const RUNS_PREFIX = 'genjob-runs-';

/**
 * Remove the runs directories a serve killed before it could (named by its pid) left in `base`: ours (our
 * uid's, a real directory), whose process is gone. Their contents are a sandbox user's: removed as names,
 * never followed (remove-tree.ts).
 */
function sweepDeadRuns(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = new RegExp(`^${RUNS_PREFIX}(\\d+)-`).exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || pidAlive(Number(pid))) continue;
    const path = join(base, name);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st?.isDirectory() || st.uid !== process.getuid?.()) continue;
    try {
      removeTree(path);
    } catch {
      // another serve sweeping it, or a disk that fails: left for the next
    }
  }
}
