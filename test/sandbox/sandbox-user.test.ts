// The sandbox user: --sandbox-user parsed against a passwd file, what bwrap's argv and the spawn options
// become with one (the command's shell lowers its process limit; bwrap starts as that uid and gid; no
// device nodes and no root-only masks, which only root's sandbox needs), the reach of a path by its mode
// bits, and a tree handed to the user without following a link. The real bubblewrap as that user:
// test/e2e/sandbox-user.test.ts and check-sandbox-user.test.ts.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { bwrapArgv } from '../../src/sandbox/bwrap-argv.js';
import { confine } from '../../src/sandbox/confine.js';
import type { SandboxPolicy } from '../../src/sandbox/policy.js';
import {
  giveTree,
  limitProcesses,
  SANDBOX_NPROC,
  type SandboxUser,
  sandboxUser,
  unreachable,
} from '../../src/sandbox/sandbox-user.js';
import { sandboxPolicy } from '../../src/sandbox/serve-policy.js';
import { thrown } from '../helpers/thrown.js';

const asRoot = process.geteuid?.() === 0;
const NOBODY: SandboxUser = { uid: 65534, gid: 65534, label: 'nobody (65534:65534)' };

let dir: string;
let passwd: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'gj-sandbox-user-')));
  chmodSync(dir, 0o755);
  passwd = join(dir, 'passwd');
  writeFileSync(
    passwd,
    'root:x:0:0:root:/root:/bin/bash\nbuilder:x:1500:1600::/home/builder:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n',
  );
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('sandboxUser: --sandbox-user', () => {
  it('as root: nobody by default, a name from passwd, a uid, a uid or name with a group; root keeps root', () => {
    expect(sandboxUser(undefined, 0, passwd)).toEqual(NOBODY);
    expect(sandboxUser('builder', 0, passwd)).toEqual({ uid: 1500, gid: 1600, label: 'builder (1500:1600)' });
    expect(sandboxUser('builder:70', 0, passwd)).toEqual({ uid: 1500, gid: 70, label: 'builder (1500:70)' });
    expect(sandboxUser('4242', 0, passwd)).toEqual({ uid: 4242, gid: 4242, label: 'uid (4242:4242)' });
    expect(sandboxUser('4242:77', 0, passwd)).toEqual({ uid: 4242, gid: 77, label: 'uid (4242:77)' });
    expect(sandboxUser('root', 0, passwd)).toBeUndefined();
    expect(sandboxUser('0', 0, passwd)).toBeUndefined();
  });

  it('without a nobody in passwd, the default is the overflow ids 65534:65534', () => {
    writeFileSync(passwd, 'root:x:0:0::/root:/bin/sh\n');
    expect(sandboxUser(undefined, 0, passwd)).toEqual(NOBODY);
  });

  it('refuses an unknown name, a malformed spec and root’s group for another user', () => {
    expect(() => sandboxUser('ghost', 0, passwd)).toThrow(/--sandbox-user "ghost": no such user in/);
    for (const bad of ['', ':5', 'a:b', '1:2:3', 'builder:'])
      expect(() => sandboxUser(bad, 0, passwd)).toThrow(/give USER, UID, USER:GID or UID:GID/);
    expect(() => sandboxUser('4242:0', 0, passwd)).toThrow(/group 0 is root's/);
  });

  it('not root: none by default, its own user accepted, any other refused', () => {
    expect(sandboxUser(undefined, 1500, passwd)).toBeUndefined();
    expect(sandboxUser('builder', 1500, passwd)).toBeUndefined();
    expect(() => sandboxUser('nobody', 1500, passwd)).toThrow(/genjob runs as uid 1500, not root/);
    expect(() => sandboxUser('root', 1500, passwd)).toThrow(/genjob runs as uid 1500, not root/);
  });
});

describe('the argv and spawn options with a sandbox user', () => {
  const policy = (user?: SandboxUser): SandboxPolicy => ({
    kind: 'bwrap',
    network: false,
    envNames: [],
    binds: [],
    bindsRw: [],
    hidden: [],
    ...(user ? { user } : {}),
  });
  const run = () => ({
    scratch: join(dir, 'scratch'),
    workspace: join(dir, 'scratch', 'files'),
    readOnly: [],
    env: {},
    command: 'echo hi',
  });

  it('the command runs once its shell has lowered the process limit; without a user, as given', () => {
    expect(limitProcesses('echo hi')).toBe(
      `ulimit -p ${SANDBOX_NPROC} 2>/dev/null || ulimit -u ${SANDBOX_NPROC} || exit 126; echo hi`,
    );
    expect(bwrapArgv(policy(NOBODY), run()).slice(-4)).toEqual(['--', 'sh', '-c', limitProcesses('echo hi')]);
    // genjob's own user's run is held too (a serve not run as root)
    expect(bwrapArgv(policy(), run()).slice(-4)).toEqual(['--', 'sh', '-c', limitProcesses('echo hi')]);
  });

  it('a hidden path behind a directory the sandbox user may not search is left to the host’s modes, not masked', () => {
    // an exposed directory holding the cache's parent, closed to others (a cache base made 0700)
    mkdirSync(join(dir, 'exposed', 'closed', 'cache'), { recursive: true });
    mkdirSync(join(dir, 'exposed', 'open', 'cache'), { recursive: true });
    chmodSync(join(dir, 'exposed', 'closed'), 0o700);
    const hiding = {
      ...policy(NOBODY),
      bindsRw: [join(dir, 'exposed')],
      hidden: [join(dir, 'exposed', 'closed', 'cache'), join(dir, 'exposed', 'open', 'cache')],
    };
    const args = bwrapArgv(hiding, run()).join(' ');
    // bwrap, started as that user, could not reach it to mount the mask: it would fail the run
    expect(args).not.toContain(`--tmpfs ${join(dir, 'exposed', 'closed', 'cache')}`);
    expect(args).toContain(`--tmpfs ${join(dir, 'exposed', 'open', 'cache')}`);
    // root's sandbox masks both
    expect(bwrapArgv({ ...hiding, user: undefined }, run()).join(' ')).toContain(
      `--tmpfs ${join(dir, 'exposed', 'closed', 'cache')}`,
    );
  });

  it.skipIf(!asRoot)('as a sandbox user, neither device nodes of its own nor root-only masks of /etc', () => {
    const token = join('/etc', `gj-sandbox-user-${process.pid}`);
    writeFileSync(token, 'TOKEN\n', { mode: 0o600 });
    try {
      // root's sandbox masks what only root may read (root-only.ts, walked once per process: a new file is not seen
      // by a walk made before; the argv of a sandbox user holds no root-only mask at all)
      const args = bwrapArgv(policy(NOBODY), { ...run(), devices: undefined });
      expect(args.join(' ')).not.toContain('--dev-bind');
      const masksOfEtc = args.filter((a, i) => a.startsWith('/etc/') && args[i - 1] === '/dev/null');
      expect(masksOfEtc.every((m) => !/gj-sandbox-user/.test(m))).toBe(true);
    } finally {
      rmSync(token, { force: true });
    }
  });

  it.skipIf(!asRoot)('confine starts bwrap as the user (uid and gid for spawn), unconfined too', async () => {
    mkdirSync(join(dir, 'scratch', 'files'), { recursive: true });
    const c = await confine(policy(NOBODY), { ...run(), jobEnv: {} });
    expect({ file: c.file, uid: c.uid, gid: c.gid }).toEqual({ file: 'bwrap', uid: 65534, gid: 65534 });
    expect(c.args.join(' ')).not.toContain('--dev-bind');
    const root = await confine(policy(), { ...run(), jobEnv: {} });
    expect({ uid: root.uid, gid: root.gid }).toEqual({ uid: undefined, gid: undefined });
    const none = await confine({ ...policy(NOBODY), kind: 'none' }, { ...run(), jobEnv: {} });
    expect({ file: none.file, args: none.args, uid: none.uid }).toEqual({
      file: 'sh',
      // no process limit unconfined: the count would be the user's every process on the host
      args: ['-c', 'echo hi'],
      uid: 65534,
    });
    // its HOME (in the scratch) is the user's
    expect(lstatSync(join(dir, 'scratch', 'home')).uid).toBe(65534);
  });
});

describe('reach and ownership', () => {
  it('a path is unreachable from the first directory on the way its mode does not let the user search', () => {
    mkdirSync(join(dir, 'a', 'b'), { recursive: true });
    chmodSync(join(dir, 'a'), 0o700);
    expect(unreachable(join(dir, 'a', 'b'), NOBODY)).toBe(join(dir, 'a'));
    chmodSync(join(dir, 'a'), 0o711);
    expect(unreachable(join(dir, 'a', 'b'), NOBODY)).toBeNull();
    // the user's own directory, or its group's, by those bits
    chmodSync(join(dir, 'a'), 0o710);
    expect(unreachable(join(dir, 'a', 'b'), { ...NOBODY, gid: lstatSync(join(dir, 'a')).gid })).toBeNull();
    expect(unreachable(join(dir, 'absent', 'x'), NOBODY)).toBeNull();
  });

  it.skipIf(!asRoot)(
    'giveTree hands every name to the user, a link itself and never what it points to',
    () => {
      const tree = join(dir, 'tree');
      mkdirSync(join(tree, 'sub'), { recursive: true });
      writeFileSync(join(tree, 'sub', 'f'), 'x');
      const outside = join(dir, 'outside');
      writeFileSync(outside, 'host file');
      symlinkSync(outside, join(tree, 'link'));
      giveTree(tree, NOBODY);
      for (const p of [tree, join(tree, 'sub'), join(tree, 'sub', 'f'), join(tree, 'link')])
        expect(lstatSync(p).uid, p).toBe(65534);
      expect(lstatSync(outside).uid).toBe(0);
    },
  );
});

describe.skipIf(!asRoot)('refusals that name the remedy, before bubblewrap fails', () => {
  it('a --generator-bind the sandbox user cannot reach is refused when serve starts', () => {
    const closed = join(dir, 'closed');
    mkdirSync(join(closed, 'tools'), { recursive: true });
    chmodSync(closed, 0o700);
    expect(thrown(() => sandboxPolicy({ generatorBind: [join(closed, 'tools')] }, {}, []))).toMatchObject({
      code: 'EGJ_USAGE',
      message: `--generator-bind ${join(closed, 'tools')}: the sandbox user nobody (65534:65534) cannot reach it (${closed} is not searchable by it); expose a path that user may reach, or pass --sandbox-user root`,
    });
    // root's sandbox reaches it
    expect(sandboxPolicy({ generatorBind: [join(closed, 'tools')], sandboxUser: 'root' }, {}, []).user).toBe(
      undefined,
    );
  });

  it('a host where root may make a user namespace and the sandbox user may not is refused naming the sysctl', async () => {
    // a bwrap that, like the kernel with unprivileged user namespaces off, starts for root only
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'bwrap'),
      '#!/bin/sh\n[ "$(id -u)" = 0 ] && exit 0\necho "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n',
      { mode: 0o755 },
    );
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      // a fresh probe module: the answers of the real bwrap above are cached per process
      vi.resetModules();
      const { requireBwrap } = await import('../../src/sandbox/bwrap-probe.js');
      const err = (await requireBwrap('genjob serve', NOBODY).catch((e: unknown) => e)) as Error & {
        code: string;
      };
      expect(err.code).toBe('EGJ_SANDBOX_UNAVAILABLE');
      const message = err.message;
      expect(message).toContain('as nobody (65534:65534)');
      expect(message).toContain('kernel.unprivileged_userns_clone=1');
      expect(message).toContain('or pass --sandbox-user root');
    } finally {
      process.env.PATH = path;
    }
  });
});

describe.skipIf(!asRoot)('the runs directory of a serve whose cache the sandbox user cannot reach', () => {
  it('is made in TMPDIR, 0711, named by the pid; one a killed serve left is removed, a live one kept', async () => {
    const dead = spawnSync('true').pid!;
    const left = join(dir, `genjob-runs-${dead}-AbC123`);
    mkdirSync(join(left, 'a-x', 'files'), { recursive: true });
    giveTree(join(left, 'a-x'), NOBODY);
    symlinkSync('/etc', join(left, 'a-x', 'files', 'link'));
    const live = join(dir, 'genjob-runs-1-XyZ789');
    mkdirSync(live);
    const tmp = process.env.TMPDIR;
    process.env.TMPDIR = dir;
    try {
      vi.resetModules();
      const { userRunsDir } = await import('../../src/sandbox/sandbox-user.js');
      // a cache in a home only root may search (the default, /root/.cache)
      mkdirSync(join(dir, 'home'), { mode: 0o700 });
      const made = userRunsDir(NOBODY, { preferred: join(dir, 'home', '.cache', 'genjob-work') });
      expect(made.startsWith(join(dir, `genjob-runs-${process.pid}-`))).toBe(true);
      expect(lstatSync(made).mode & 0o777).toBe(0o711);
      expect(existsSync(left)).toBe(false);
      expect(existsSync(live)).toBe(true);
      expect(existsSync('/etc/passwd')).toBe(true);
    } finally {
      // assigning undefined would leave the string "undefined" for every later test of this process
      if (tmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmp;
    }
  });
});
