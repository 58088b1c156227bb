// Served as root, each run binds device nodes of its own, owned by nobody, over the host's (which root
// inside owns, and could chmod for every user of the host): made in the run directory, one directory per run.
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bwrapArgv } from '../../src/sandbox/bwrap-argv.js';
import { DEVICES, NOBODY, privateDevices } from '../../src/sandbox/device-nodes.js';

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
    'are owned by nobody (root inside, not their owner, cannot chmod them), mode 0666, a fresh directory per run',
    () => {
      const devices = privateDevices(dir)!;
      expect(devices).toMatch(new RegExp(`^${dir}/\\.dev-`));
      expect(privateDevices(dir)).not.toBe(devices);
      for (const [n, major, minor] of DEVICES) {
        const st = lstatSync(join(devices, n));
        expect(st.isCharacterDevice(), n).toBe(true);
        expect([st.mode & 0o7777, st.uid, st.gid], n).toEqual([0o666, NOBODY, NOBODY]);
        expect([Math.floor(st.rdev / 256), st.rdev % 256], n).toEqual([major, minor]);
      }
    },
  );

  it('are none where the run directory cannot hold them', () => {
    expect(privateDevices(join(dir, 'missing'))).toBeUndefined();
    expect(readdirSync(dir)).toEqual([]);
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
