// Served as root, each run binds device nodes of genjob's own, owned by nobody, over the host's (which root
// inside owns, and could chmod for every user of the host): made once in genjob's cache directory, and
// checked before each run.
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bwrapArgv } from '../../src/sandbox/bwrap-argv.js';
import { DEVICES, devicesHold, keptDevices, NOBODY } from '../../src/sandbox/device-nodes.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gj-dev-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the run’s own device nodes', () => {
  it('are exactly the devices bwrap’s --dev binds from the host', () => {
    expect(DEVICES).toEqual([
      ['null', 1, 3],
      ['zero', 1, 5],
      ['full', 1, 7],
      ['random', 1, 8],
      ['urandom', 1, 9],
      ['tty', 5, 0],
    ]);
    expect(NOBODY).toBe(65534);
  });

  it.skipIf(process.geteuid?.() !== 0)(
    'are owned by nobody (root inside, not their owner, cannot chmod them), mode 0666, made once and kept',
    () => {
      const home = join(dir, 'cache', 'sandbox-devices');
      expect(keptDevices(home)).toBe(home);
      for (const [n, major, minor] of DEVICES) {
        const st = lstatSync(join(home, n));
        expect(st.isCharacterDevice(), n).toBe(true);
        expect([st.mode & 0o7777, st.uid, st.gid], n).toEqual([0o666, NOBODY, NOBODY]);
        expect([Math.floor(st.rdev / 256), st.rdev % 256], n).toEqual([major, minor]);
      }
      // kept: the same inodes for the next run, nothing left beside them
      const ino = lstatSync(join(home, 'null')).ino;
      expect(keptDevices(home)).toBe(home);
      expect(lstatSync(join(home, 'null')).ino).toBe(ino);
      expect(readdirSync(join(dir, 'cache'))).toEqual(['sandbox-devices']);
    },
  );

  it.skipIf(process.geteuid?.() !== 0)(
    'tampered with (evil: a mode, an owner, a link, one gone), are made again',
    () => {
      const home = join(dir, 'sandbox-devices');
      const tamper: Array<(f: string) => void> = [
        (f) => chmodSync(f, 0o600),
        (f) => chownSync(f, 0, 0),
        (f) => {
          unlinkSync(f);
          symlinkSync('/etc/shadow', f);
        },
        (f) => unlinkSync(f),
      ];
      for (const evil of tamper) {
        expect(keptDevices(home)).toBe(home);
        evil(join(home, 'urandom'));
        expect(devicesHold(home)).toBe(false);
        expect(keptDevices(home)).toBe(home);
        expect(devicesHold(home)).toBe(true);
        expect(lstatSync(join(home, 'urandom')).isCharacterDevice()).toBe(true);
      }
    },
  );

  it('are none where they cannot be made', () => {
    const file = join(dir, 'file');
    rmSync(file, { force: true });
    symlinkSync('/nonexistent', file);
    expect(keptDevices(join(file, 'sandbox-devices'))).toBeUndefined();
    expect(readdirSync(dir)).toEqual(['file']);
  });

  it('are bound over the host’s, right after /dev is made', () => {
    const run = { scratch: dir, workspace: dir, readOnly: [], env: {}, command: 'true', devices: '/d' };
    const policy = {
      kind: 'bwrap',
      network: false,
      envNames: [],
      binds: [],
      bindsRw: [],
      hidden: [],
    } as const;
    const argv = bwrapArgv(policy, run);
    const at = argv.indexOf('--dev');
    expect(argv.slice(at, at + 2 + 3 * DEVICES.length)).toEqual([
      '--dev',
      '/dev',
      ...DEVICES.flatMap(([n]) => ['--dev-bind', `/d/${n}`, `/dev/${n}`]),
    ]);
    expect(bwrapArgv(policy, { ...run, devices: undefined })).not.toContain('--dev-bind');
  });
});
