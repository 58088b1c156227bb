// The devices of the sandbox's /dev, served as root. bwrap's --dev binds the host's own device inodes
// (/dev/null, /dev/urandom…), and root inside is the host's uid 0, their owner: an owner changes a
// file's mode with no capability, so `chmod 0 /dev/null` in a generator took /dev/null from every other
// user of the host, long after the run. A bind cannot be read-only and keep its devices (bwrap's
// --remount-ro adds nodev). So serve, as root, makes each run nodes of its own for the same devices,
// owned by nobody, in the run directory (gone with it), and binds them over the host's: root inside is
// not their owner and has no CAP_FOWNER, so their mode stays as made. Where the run directory's
// filesystem forbids devices (nodev), the host's nodes stay bound (docs/trust.md says so).
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';

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
/** The prefix of their directory in the run directory (a fresh one per run: mkdtemp). */
export const DEVICES_PREFIX = '.dev-';

/** Make the run's own device nodes in `runDir`; their directory, or undefined where none can be used. */
export function privateDevices(runDir: string): string | undefined {
  let dir: string;
  try {
    dir = mkdtempSync(join(runDir, DEVICES_PREFIX));
  } catch {
    return undefined;
  }
  // Node has no mknod: one shell makes them all (names and numbers are the constants above)
  const make = DEVICES.map(([n, major, minor]) => `mknod -m 666 ${n} c ${major} ${minor}`).join(' && ');
  const names = DEVICES.map(([n]) => n).join(' ');
  const r = spawnSync(
    'sh',
    ['-c', `cd "$1" && umask 0 && ${make} && chown ${NOBODY}:${NOBODY} ${names}`, 'sh', dir],
    {
      stdio: 'ignore',
    },
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
