// The devices of the sandbox's /dev in root's sandbox (--sandbox-user root: a sandbox user owns no
// device, sandbox-user.ts). bwrap's --dev binds the host's own device inodes
// (/dev/null, /dev/urandom…), and root inside is the host's uid 0, their owner: an owner changes a
// file's mode with no capability, so `chmod 0 /dev/null` in a generator took /dev/null from every other
// user of the host, long after the run. A bind cannot be read-only and keep its devices (bwrap's
// --remount-ro adds nodev). So serve (and check), as root, bind nodes of their own for the same devices,
// owned by nobody, over the host's: root inside is not their owner and has no CAP_FOWNER, so their mode
// stays as made. Node has no mknod, and a shell with seven children costs a run more than its
// generator: the nodes are made once, kept in genjob's cache directory (which every sandbox hides), and
// checked before each run (one lstat each). Where that directory's filesystem forbids devices (nodev), the
// host's nodes stay bound (docs/trust.md says so).
import { spawnSync } from 'node:child_process';
import { closeSync, lstatSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { defaultCacheDir } from '../core/cache-dir.js';

/** The devices bwrap's --dev binds from the host, with their numbers (major, minor). */
export const DEVICES: ReadonlyArray<readonly [name: string, major: number, minor: number]> = [
  ['null', 1, 3],
  ['zero', 1, 5],
  ['full', 1, 7],
  ['random', 1, 8],
  ['urandom', 1, 9],
  ['tty', 5, 0],
];
/** The owner of the nodes: nobody, never a uid the sandbox runs as. */
export const NOBODY = 65534;
/** The kept nodes' directory, in genjob's cache directory. */
export const DEVICES_DIR = 'sandbox-devices';

/** Whether `dir` (root's own directory, no link) holds exactly the nodes made for it, untouched. */
export function devicesHold(dir: string): boolean {
  try {
    const d = lstatSync(dir);
    if (!d.isDirectory() || d.uid !== 0 || (d.mode & 0o022) !== 0) return false;
    return DEVICES.every(([n, major, minor]) => {
      const st = lstatSync(join(dir, n));
      return (
        st.isCharacterDevice() &&
        st.rdev === major * 256 + minor &&
        st.uid === NOBODY &&
        st.gid === NOBODY &&
        (st.mode & 0o7777) === 0o666
      );
    });
  } catch {
    return false;
  }
}

/** Make the nodes in a fresh directory under `parent`; its path, or undefined where they cannot work. */
function makeDevices(parent: string): string | undefined {
  let dir: string;
  try {
    mkdirSync(parent, { recursive: true, mode: 0o700 });
    dir = mkdtempSync(join(parent, `.${DEVICES_DIR}-`));
  } catch {
    return undefined;
  }
  const make = DEVICES.map(([n, major, minor]) => `mknod -m 666 ${n} c ${major} ${minor}`).join(' && ');
  const names = DEVICES.map(([n]) => n).join(' ');
  const r = spawnSync(
    'sh',
    ['-c', `cd "$1" && umask 0 && ${make} && chown ${NOBODY}:${NOBODY} ${names}`, 'sh', dir],
    { stdio: 'ignore' },
  );
  try {
    if (r.status !== 0) throw new Error('mknod failed');
    // a node on a nodev filesystem cannot be opened: such a bind would leave the sandbox no /dev/null
    closeSync(openSync(join(dir, 'null'), 'w'));
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

/**
 * The device nodes a run served as root binds: `home` when it holds them untouched, else made again
 * there (aside, then renamed into place: a racing maker's set stands when it holds). Undefined where none
 * can be made.
 */
export function keptDevices(home = join(defaultCacheDir(), DEVICES_DIR)): string | undefined {
  if (devicesHold(home)) return home;
  const made = makeDevices(join(home, '..'));
  if (made === undefined) return undefined;
  try {
    rmSync(home, { recursive: true, force: true });
    renameSync(made, home);
  } catch {
    rmSync(made, { recursive: true, force: true });
  }
  return devicesHold(home) ? home : undefined;
}
