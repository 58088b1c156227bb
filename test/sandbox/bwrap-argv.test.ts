// The bubblewrap command line for one generator run. Mount order is the guarantee (a later mount covers
// an earlier one): system read-only, /etc secrets masked, private /tmp /proc /dev, exposed paths,
// hidden paths masked where an exposed path would show them, the scratch directory writable, its job
// file read-only. The argv is pinned piece by piece, then run under the real bwrap to see what a
// generator sees.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type BwrapRun,
  bwrapArgv,
  ETC_SECRETS,
  NAMESPACE_FLAGS,
  PROC_MASKED,
  SANDBOX_HOME,
  SYSTEM_DIRS,
} from '../../src/sandbox/bwrap-argv.js';
import type { SandboxPolicy } from '../../src/sandbox/policy.js';
import { limitProcesses } from '../../src/sandbox/sandbox-user.js';
import { SHM_BYTES, TMP_MAX_BYTES, tmpBytes } from '../../src/sandbox/tmpfs-limits.js';

let dir: string;
let run: BwrapRun;
let policy: SandboxPolicy;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'gj-bwrap-')));
  for (const d of ['scratch/files', 'exposed/cache', 'exposed-rw', 'exposedX', 'elsewhere'])
    mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, 'scratch/job.json'), '{"job":1}');
  writeFileSync(join(dir, 'exposed/readme.txt'), 'shown\n');
  writeFileSync(join(dir, 'exposed/cache/entry'), 'cached result');
  writeFileSync(join(dir, 'exposed/key'), 'SECRET KEY');
  writeFileSync(join(dir, 'exposedX/y'), 'sibling');
  policy = {
    kind: 'bwrap',
    network: false,
    envNames: [],
    binds: [join(dir, 'exposed'), join(dir, 'missing'), `${join(dir, 'exposedX')}/`],
    bindsRw: [join(dir, 'exposed-rw'), join(dir, 'missing-rw')],
    hidden: [
      join(dir, 'exposed/cache'),
      join(dir, 'exposed/key'),
      join(dir, 'exposed/absent'),
      join(dir, 'elsewhere'),
      join(dir, 'exposedX/y'),
    ],
  };
  run = {
    scratch: join(dir, 'scratch'),
    workspace: join(dir, 'scratch/files'),
    readOnly: [join(dir, 'scratch/job.json'), join(dir, 'scratch/missing.json')],
    env: { PATH: '/usr/bin:/bin', HOME: SANDBOX_HOME, GENJOB_KEY: 'k' },
    command: 'echo hi',
  };
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The system part of the argv on this machine, read from the filesystem: what bwrapArgv must emit. */
function systemPart(): string[] {
  const out: string[] = [];
  for (const d of SYSTEM_DIRS) {
    const st = lstatSync(d, { throwIfNoEntry: false });
    if (st?.isSymbolicLink()) out.push('--symlink', readlinkSync(d), d);
    else if (st?.isDirectory()) out.push('--ro-bind', d, d);
  }
  const nodeDir = dirname(process.execPath);
  if (!SYSTEM_DIRS.some((s) => nodeDir === s || nodeDir.startsWith(`${s}/`)))
    out.push('--ro-bind', nodeDir, nodeDir);
  return out;
}

/**
 * What under /etc only root may read, by find(1): directories others may not list or search (not
 * entered), files others may not read.
 */
function rootOnlyByFind(): string[] {
  const r = spawnSync(
    'find',
    [
      '/etc',
      '-xdev',
      '(',
      '-type',
      'd',
      '!',
      '-perm',
      '-o=rx',
      '-print',
      '-prune',
      ')',
      '-o',
      '(',
      '-type',
      'f',
      '!',
      '-perm',
      '-o=r',
      '-print',
      ')',
    ],
    { encoding: 'utf8' },
  );
  return r.stdout
    .split('\n')
    .filter((p) => p !== '')
    .sort();
}

/**
 * The masks of the /etc secrets that exist on this machine, as the /etc view shows them; served as root,
 * then what only root may read there, but what a secret's mask covers already.
 */
function etcMasks(): string[] {
  const out: string[] = [];
  const masked: string[] = [];
  const asRoot = process.geteuid?.() === 0;
  for (const path of [...ETC_SECRETS, ...(asRoot ? rootOnlyByFind() : [])]) {
    if (masked.some((m) => path === m || path.startsWith(`${m}/`))) continue;
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (st?.isDirectory()) out.push('--tmpfs', path);
    else if (st?.isFile()) out.push('--ro-bind', '/dev/null', path);
    else continue;
    masked.push(path);
  }
  return out;
}

/** Each tmpfs mask of `masks` remounted read-only, as the argv ends them. */
function sealed(masks: string[]): string[] {
  return masks.flatMap((arg, i) => (arg === '--tmpfs' ? ['--remount-ro', masks[i + 1]!] : []));
}

/** The argv from the first exposed path's bind up to (not including) the scratch's bind. */
function exposedPart(argv: string[]): string[] {
  const from = argv.indexOf('/tmp/home') + 1;
  return argv.slice(from, argv.indexOf(run.scratch, from) - 1);
}

describe('the confinement policy', () => {
  // pinned as lists: on a machine without /lib32 or /etc/sudoers the argv alone cannot show a dropped entry
  it('binds exactly these system directories read-only', () => {
    expect(SYSTEM_DIRS).toEqual([
      '/usr',
      '/bin',
      '/sbin',
      '/lib',
      '/lib32',
      '/lib64',
      '/libx32',
      '/etc',
      '/opt',
    ]);
  });

  it('reads exactly these /proc files as empty', () => {
    expect(PROC_MASKED).toEqual(['/proc/keys']);
  });

  it('masks exactly these secrets under /etc', () => {
    const names = [
      'ssh',
      'shadow',
      'shadow-',
      'gshadow',
      'gshadow-',
      'sudoers',
      'sudoers.d',
      'munge',
      'ssl/private',
      'genjob',
    ];
    expect(ETC_SECRETS).toEqual(names.map((n) => `/etc/${n}`));
  });
});

describe('bwrapArgv', () => {
  it('starts with its own namespaces of every kind, a user namespace even for root, no capability, no nested user namespace; no network unless the policy allows it', () => {
    expect(NAMESPACE_FLAGS).toEqual([
      '--unshare-all',
      '--unshare-user',
      '--disable-userns',
      '--cap-drop',
      'ALL',
      '--die-with-parent',
      '--new-session',
    ]);
    const argv = bwrapArgv(policy, run);
    expect(argv.slice(0, 7)).toEqual(NAMESPACE_FLAGS);
    expect(argv).not.toContain('--share-net');
    const net = bwrapArgv({ ...policy, network: true }, run);
    expect(net.slice(0, 8)).toEqual([...NAMESPACE_FLAGS, '--share-net']);
  });

  it('binds the system read-only (symlinks recreated), then a private /proc', () => {
    const argv = bwrapArgv(policy, run);
    const sys = systemPart();
    expect(argv.slice(7, 7 + sys.length)).toEqual(sys);
    expect(argv[7 + sys.length]).toBe('--proc');
  });

  it('then a private /proc (read-only), /dev and /tmp with the sandbox HOME, the exposed paths that exist, every secret masked where they show it, the scratch writable, its workspace bound onto itself and its job file read-only', () => {
    const argv = bwrapArgv(policy, run);
    const rest = argv.slice(argv.indexOf('--proc'));
    expect(rest).toEqual([
      '--proc',
      '/proc',
      '--remount-ro',
      '/proc',
      ...(existsSync('/proc/keys') ? ['--ro-bind', '/dev/null', '/proc/keys'] : []),
      '--dev',
      '/dev',
      '--size',
      String(SHM_BYTES),
      '--tmpfs',
      '/dev/shm',
      '--remount-ro',
      '/dev',
      '--size',
      String(tmpBytes()),
      '--tmpfs',
      '/tmp',
      '--dir',
      '/tmp/home',
      '--ro-bind',
      join(dir, 'exposed'),
      join(dir, 'exposed'),
      '--ro-bind',
      `${join(dir, 'exposedX')}/`,
      `${join(dir, 'exposedX')}/`,
      '--bind',
      join(dir, 'exposed-rw'),
      join(dir, 'exposed-rw'),
      ...etcMasks(),
      '--tmpfs',
      join(dir, 'exposed/cache'),
      '--ro-bind',
      '/dev/null',
      join(dir, 'exposed/key'),
      '--ro-bind',
      '/dev/null',
      join(dir, 'exposedX/y'),
      '--bind',
      join(dir, 'scratch'),
      join(dir, 'scratch'),
      '--bind',
      join(dir, 'scratch/files'),
      join(dir, 'scratch/files'),
      '--ro-bind',
      join(dir, 'scratch/job.json'),
      join(dir, 'scratch/job.json'),
      ...sealed(etcMasks()),
      '--remount-ro',
      join(dir, 'exposed/cache'),
      '--remount-ro',
      '/',
      '--chdir',
      join(dir, 'scratch/files'),
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/bin:/bin',
      '--setenv',
      'HOME',
      '/tmp/home',
      '--setenv',
      'GENJOB_KEY',
      'k',
      '--',
      'sh',
      '-c',
      // its shell lowers its process limit first (sandbox-user.ts)
      limitProcesses('echo hi'),
    ]);
  });

  it('masks an exposed path that is itself hidden whole, and pins each directory on the way to a hidden path under a writable exposed path', () => {
    const exposed = join(dir, 'exposed');
    const rw = join(dir, 'exposed-rw');
    mkdirSync(join(rw, 'sub/deeper/cache'), { recursive: true });
    const argv = bwrapArgv(
      { ...policy, binds: [exposed], bindsRw: [rw], hidden: [exposed, join(rw, 'sub/deeper/cache')] },
      run,
    );
    expect(exposedPart(argv)).toEqual([
      '--ro-bind',
      exposed,
      exposed,
      '--bind',
      rw,
      rw,
      ...etcMasks(),
      '--tmpfs',
      exposed,
      '--bind',
      join(rw, 'sub'),
      join(rw, 'sub'),
      '--bind',
      join(rw, 'sub/deeper'),
      join(rw, 'sub/deeper'),
      '--tmpfs',
      join(rw, 'sub/deeper/cache'),
    ]);
  });

  it('pins nothing under a read-only exposed path, however deep the hidden path lies', () => {
    const exposed = join(dir, 'exposed');
    mkdirSync(join(exposed, 'deep/er/cache'), { recursive: true });
    const argv = bwrapArgv(
      { ...policy, binds: [exposed], bindsRw: [], hidden: [join(exposed, 'deep/er/cache')] },
      run,
    );
    expect(exposedPart(argv).slice(3 + etcMasks().length)).toEqual([
      '--tmpfs',
      join(exposed, 'deep/er/cache'),
    ]);
  });

  it('pins no directory that is itself the root of a writable bind (a mount point already)', () => {
    const rw = join(dir, 'exposed-rw');
    mkdirSync(join(rw, 'inner/cache'), { recursive: true });
    const argv = bwrapArgv(
      { ...policy, binds: [], bindsRw: [rw, join(rw, 'inner')], hidden: [join(rw, 'inner/cache')] },
      run,
    );
    expect(exposedPart(argv).slice(6 + etcMasks().length)).toEqual(['--tmpfs', join(rw, 'inner/cache')]);
  });

  it('pins no directory that a read-only bind inside the writable one holds (unwritable there already)', () => {
    const rw = join(dir, 'exposed-rw');
    mkdirSync(join(rw, 'ro/x/cache'), { recursive: true });
    const argv = bwrapArgv(
      { ...policy, binds: [join(rw, 'ro')], bindsRw: [rw], hidden: [join(rw, 'ro/x/cache')] },
      run,
    );
    // the cache is masked in both views that show it, at one place; nothing on its way is pinned
    expect(exposedPart(argv).slice(6 + etcMasks().length)).toEqual(['--tmpfs', join(rw, 'ro/x/cache')]);
  });

  it('pins nothing on the way to a hidden path that does not exist (there is nothing to mask)', () => {
    const rw = join(dir, 'exposed-rw');
    const argv = bwrapArgv({ ...policy, binds: [], bindsRw: [rw], hidden: [join(rw, 'not/yet/cache')] }, run);
    expect(exposedPart(argv)).toEqual(['--bind', rw, rw, ...etcMasks()]);
  });

  it('masks the worker repository where a system directory shows it, right after the system and before what is exposed, which shows on top', () => {
    const exposed = join(dir, 'exposed');
    const argv = bwrapArgv({ ...policy, masked: ['/usr/share', exposed] }, run);
    const system = systemPart();
    expect(argv.slice(NAMESPACE_FLAGS.length, NAMESPACE_FLAGS.length + system.length)).toEqual(system);
    // an exposed path it holds is no system view: nothing is masked there, the bind shows it whole
    expect(argv.slice(NAMESPACE_FLAGS.length + system.length, argv.indexOf('--proc'))).toEqual([
      '--tmpfs',
      '/usr/share',
    ]);
    expect(argv.indexOf(exposed)).toBeGreaterThan(argv.indexOf('--proc'));
  });

  it('masks a hidden path inside a system directory, which is always exposed', () => {
    const argv = bwrapArgv({ ...policy, binds: [], bindsRw: [], hidden: ['/etc/passwd', '/usr'] }, run);
    expect(exposedPart(argv)).toEqual([
      ...etcMasks(),
      '--ro-bind',
      '/dev/null',
      '/etc/passwd',
      '--tmpfs',
      '/usr',
    ]);
  });

  it('does not mask a hidden path no exposed path shows (a sibling whose name merely starts the same is not under it)', () => {
    const exposed = join(dir, 'exposed');
    const argv = bwrapArgv({ ...policy, binds: [exposed], bindsRw: [], hidden: [`${exposed}-rw`] }, run);
    expect(argv).not.toContain(`${exposed}-rw`);
  });

  it('masks a hidden path inside another hidden path once, by the outer one', () => {
    const exposed = join(dir, 'exposed');
    mkdirSync(join(exposed, 'cache/inner'));
    const argv = bwrapArgv(
      {
        ...policy,
        binds: [exposed],
        bindsRw: [],
        hidden: [join(exposed, 'cache/inner'), join(exposed, 'cache')],
      },
      run,
    );
    expect(exposedPart(argv).slice(3 + etcMasks().length)).toEqual(['--tmpfs', join(exposed, 'cache')]);
  });

  it('compares real paths: a key reached through a rotation symlink is masked where it really is, and an exposed path given through a symlink gets its masks at the link', () => {
    const exposed = join(dir, 'exposed');
    symlinkSync('key', join(exposed, 'current.key'));
    symlinkSync(exposed, join(dir, 'via-link'));
    const link = join(dir, 'via-link');
    const argv = bwrapArgv(
      {
        ...policy,
        binds: [link],
        bindsRw: [],
        hidden: [join(exposed, 'current.key'), join(exposed, 'cache')],
      },
      run,
    );
    expect(exposedPart(argv)).toEqual([
      '--ro-bind',
      link,
      link,
      ...etcMasks(),
      '--ro-bind',
      '/dev/null',
      join(link, 'key'),
      '--tmpfs',
      join(link, 'cache'),
    ]);
  });
});

describe('bwrapArgv and the node running genjob', () => {
  const realExecPath = process.execPath;
  afterEach(() => {
    process.execPath = realExecPath;
  });
  /** What the argv for a node at `execPath` binds beyond the argv for a node in /usr/bin. */
  const nodeBinds = (execPath: string) => {
    process.execPath = '/usr/bin/node';
    const base = bwrapArgv(policy, run);
    process.execPath = execPath;
    const argv = bwrapArgv(policy, run);
    const at = argv.findIndex((x, i) => x !== base[i]);
    return at < 0 ? [] : argv.slice(at, at + argv.length - base.length);
  };

  it('binds the directory of a node installed outside the system directories read-only', () => {
    expect(nodeBinds('/home/u/.nvm/versions/node/v20/bin/node')).toEqual([
      '--ro-bind',
      '/home/u/.nvm/versions/node/v20/bin',
      '/home/u/.nvm/versions/node/v20/bin',
    ]);
    expect(nodeBinds('/usrlocal/bin/node')).toEqual(['--ro-bind', '/usrlocal/bin', '/usrlocal/bin']);
  });

  it("masks a hidden path under the node's directory, read-only like the system: no pin", () => {
    const nodeBin = join(dir, 'node/bin');
    mkdirSync(join(nodeBin, 'lib/cache'), { recursive: true });
    process.execPath = join(nodeBin, 'node');
    const argv = bwrapArgv({ ...policy, binds: [], bindsRw: [], hidden: [join(nodeBin, 'lib/cache')] }, run);
    expect(exposedPart(argv)).toEqual([...etcMasks(), '--tmpfs', join(nodeBin, 'lib/cache')]);
  });

  it('binds nothing more for a node inside a system directory, or in one itself', () => {
    expect(nodeBinds('/opt/node/bin/node')).toEqual([]);
    expect(nodeBinds('/opt/node')).toEqual([]);
  });
});

describe('bwrapArgv under the real bubblewrap', () => {
  it('lets the generator write only its scratch and exposed-rw paths, and shows hidden paths and /etc secrets empty', () => {
    run.command = [
      'echo made > out.txt',
      'echo rw > "$RW/w.txt"',
      '{ echo changed > ../job.json; } 2>/dev/null && echo JOB-WRITABLE',
      '{ echo x > "$EXPOSED/new.txt"; } 2>/dev/null && echo EXPOSED-WRITABLE',
      'cat "$EXPOSED/readme.txt"',
      'echo "key=[$(cat "$EXPOSED/key" 2>&1)]"',
      'echo "cache=[$(ls -A "$EXPOSED/cache")]"',
      'echo "elsewhere=[$(ls -A "$ELSEWHERE" 2>&1 | grep -c "No such")]"',
      'echo "shadow=[$(cat /etc/shadow 2>&1)]"',
      'test -d "$HOME" && echo "home=$HOME"',
      'echo "env=$(env | cut -d= -f1 | sort | tr "\\n" " ")"',
    ].join('; ');
    run.env = {
      PATH: '/usr/bin:/bin',
      HOME: SANDBOX_HOME,
      RW: join(dir, 'exposed-rw'),
      EXPOSED: join(dir, 'exposed'),
      ELSEWHERE: join(dir, 'elsewhere'),
    };
    const r = spawnSync('bwrap', bwrapArgv(policy, run), {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    expect(r.stderr).toBe('');
    // a masked file is /dev/null on a nodev mount: opening it is refused, its bytes never show
    expect(r.stdout.split('\n')).toEqual([
      'shown',
      `key=[cat: ${join(dir, 'exposed/key')}: Permission denied]`,
      'cache=[]',
      'elsewhere=[1]',
      'shadow=[cat: /etc/shadow: Permission denied]',
      'home=/tmp/home',
      'env=ELSEWHERE EXPOSED HOME PATH PWD RW ',
      '',
    ]);
    expect(readFileSync(join(dir, 'scratch/files/out.txt'), 'utf8')).toBe('made\n');
    expect(readFileSync(join(dir, 'exposed-rw/w.txt'), 'utf8')).toBe('rw\n');
    expect(readFileSync(join(dir, 'scratch/job.json'), 'utf8')).toBe('{"job":1}');
    expect(r.status).toBe(0);
  });
});

describe('bwrapArgv under the real bubblewrap, escape attempts (as root in CI and here)', () => {
  it('leaves the generator no way to unmount a mask, remount anything writable, swap its workspace or nest a user namespace', () => {
    const exposed = join(dir, 'exposed');
    const rw = join(dir, 'exposed-rw');
    mkdirSync(join(rw, 'sub/cache'), { recursive: true });
    writeFileSync(join(rw, 'sub/cache/secret'), 'cache secret');
    policy = { ...policy, hidden: [...policy.hidden, join(rw, 'sub/cache')] };
    const tries = {
      'read-cache': `cat ${rw}/sub/cache/secret`,
      'move-cache-parent': `mv ${rw}/sub ${rw}/moved`,
      'remove-cache-parent': `rm -rf ${rw}/sub`,
      'umount-shadow': 'umount /etc/shadow',
      'umount-ssh': 'umount /etc/ssh',
      'umount-key': `umount ${exposed}/key`,
      'umount-cache': `umount ${exposed}/cache`,
      'remount-usr': 'mount -o remount,bind,rw /usr',
      'remount-etc': 'mount -o remount,bind,rw /etc',
      'remount-exposed': `mount -o remount,bind,rw ${exposed}`,
      'write-usr': `touch /usr/gj-escape-${process.pid}`,
      'write-exposed': `touch ${exposed}/gj-escape`,
      'write-root': 'touch /gj-escape',
      'swap-workspace': 'cd .. && mv files files.old',
      'rmdir-workspace': 'cd .. && rm -rf files',
      'nested-userns': 'unshare -Ur true',
      'nested-bwrap': 'bwrap --ro-bind / / true',
    };
    run.command = Object.entries(tries)
      .map(
        ([name, cmd]) =>
          `if (${cmd}) >/dev/null 2>&1; then echo "${name}: DONE"; else echo "${name}: refused"; fi`,
      )
      .join('\n');
    const escaped = `/usr/gj-escape-${process.pid}`;
    const r = spawnSync('bwrap', bwrapArgv(policy, run), {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    const onHost = lstatSync(escaped, { throwIfNoEntry: false });
    rmSync(escaped, { force: true }); // what an unconfined root would have left in the host's /usr
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual(Object.keys(tries).map((n) => `${n}: refused`));
    expect(onHost).toBeUndefined();
    expect(readFileSync(join(exposed, 'key'), 'utf8')).toBe('SECRET KEY');
    expect(lstatSync(join(dir, 'scratch/files')).isDirectory()).toBe(true);
    expect(readFileSync(join(rw, 'sub/cache/secret'), 'utf8')).toBe('cache secret');
  });
});

describe('a hostile generator filling the host memory under the real bubblewrap', () => {
  it('hostile: finds /tmp and /dev/shm bounded, and /dev and every mask read-only, not tmpfs for it to fill', () => {
    const mb = 1024 * 1024;
    const tries = {
      'fill-mask': `head -c ${mb} /dev/zero > ${dir}/exposed/cache/fill`,
      'fill-dev': `head -c ${mb} /dev/zero > /dev/fill`,
      'fill-shm-past-its-size': `head -c ${SHM_BYTES + mb} /dev/zero > /dev/shm/fill`,
    };
    run.command = [
      // what a generator may still use: a file in /tmp, its HOME, /dev/shm, the devices
      'echo ok > /tmp/home/a && echo ok > /dev/shm/a && echo ok > /dev/null && cat /tmp/home/a /dev/shm/a',
      // bytes, whatever the page size: blocks × block size
      "echo tmp=$(( $(stat -f -c '%b*%S' /tmp) ))",
      "echo shm=$(( $(stat -f -c '%b*%S' /dev/shm) ))",
      ...Object.entries(tries).map(
        ([name, cmd]) =>
          `if (${cmd}) 2>/dev/null; then echo "${name}: DONE"; else echo "${name}: refused"; fi`,
      ),
    ].join('\n');
    const r = spawnSync('bwrap', bwrapArgv(policy, run), {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual([
      'ok',
      'ok',
      `tmp=${tmpBytes()}`,
      `shm=${SHM_BYTES}`,
      ...Object.keys(tries).map((n) => `${n}: refused`),
    ]);
  });

  it('sizes /tmp at a quarter of the host memory, in whole pages, at most 2 GiB', () => {
    expect(TMP_MAX_BYTES).toBe(2 * 1024 ** 3);
    expect(SHM_BYTES).toBe(64 * 1024 ** 2);
    expect(tmpBytes(24 * 1024 ** 3)).toBe(TMP_MAX_BYTES);
    expect(tmpBytes(4 * 1024 ** 3)).toBe(1024 ** 3);
    expect(tmpBytes(4 * 1024 ** 3 + 3)).toBe(1024 ** 3);
    expect(tmpBytes(1000)).toBe(4096); // never 0, which a tmpfs takes for "no limit"
  });
});
