// The bubblewrap command line for one generator run. Mount order is the guarantee (a later mount covers
// an earlier one): system read-only, /etc secrets masked, private /tmp /proc /dev, exposed paths,
// hidden paths masked where an exposed path would show them, the scratch directory writable, its job
// file read-only. The argv is pinned piece by piece, then run under the real bwrap to see what a
// generator sees.
import { spawnSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type BwrapRun,
  bwrapArgv,
  ETC_SECRETS,
  SANDBOX_HOME,
  SYSTEM_DIRS,
} from '../../src/sandbox/bwrap-argv.js';
import type { SandboxPolicy } from '../../src/sandbox/policy.js';

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
  for (const secret of ETC_SECRETS) {
    const st = lstatSync(secret, { throwIfNoEntry: false });
    if (st?.isDirectory()) out.push('--tmpfs', secret);
    else if (st?.isFile()) out.push('--ro-bind', '/dev/null', secret);
  }
  return out;
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
  it('unshares every namespace, dies with its parent and starts a new session; no network unless the policy allows it', () => {
    const argv = bwrapArgv(policy, run);
    expect(argv.slice(0, 3)).toEqual(['--unshare-all', '--die-with-parent', '--new-session']);
    expect(argv).not.toContain('--share-net');
    const net = bwrapArgv({ ...policy, network: true }, run);
    expect(net.slice(0, 4)).toEqual(['--unshare-all', '--die-with-parent', '--new-session', '--share-net']);
  });

  it('binds the system read-only (symlinks recreated), then masks the /etc secrets that exist', () => {
    const argv = bwrapArgv(policy, run);
    const sys = systemPart();
    expect(argv.slice(3, 3 + sys.length)).toEqual(sys);
    expect(argv[3 + sys.length]).toBe('--proc');
  });

  it('then a private /proc, /dev and /tmp with the sandbox HOME, the exposed paths that exist, the hidden ones masked, the scratch writable and its job file read-only', () => {
    const argv = bwrapArgv(policy, run);
    const rest = argv.slice(argv.indexOf('--proc'));
    expect(rest).toEqual([
      '--proc',
      '/proc',
      '--dev',
      '/dev',
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
      '--ro-bind',
      join(dir, 'scratch/job.json'),
      join(dir, 'scratch/job.json'),
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
      'echo hi',
    ]);
  });

  it('masks a hidden path that is itself exposed, and one under a writable exposed path', () => {
    const exposed = join(dir, 'exposed');
    const rw = join(dir, 'exposed-rw');
    mkdirSync(join(rw, 'sub'));
    const argv = bwrapArgv(
      { ...policy, binds: [exposed], bindsRw: [rw], hidden: [exposed, join(rw, 'sub')] },
      run,
    );
    const from = argv.indexOf('--bind');
    expect(argv.slice(from, from + 7)).toEqual([
      '--bind',
      rw,
      rw,
      '--tmpfs',
      exposed,
      '--tmpfs',
      join(rw, 'sub'),
    ]);
  });

  it('masks a hidden path inside a system directory, which is always exposed', () => {
    const argv = bwrapArgv({ ...policy, binds: [], bindsRw: [], hidden: ['/etc/passwd', '/usr'] }, run);
    const from = argv.indexOf('/tmp/home') + 1;
    expect(argv.slice(from, from + 6)).toEqual([
      '--ro-bind',
      '/dev/null',
      '/etc/passwd',
      '--tmpfs',
      '/usr',
      '--bind',
    ]);
  });

  it('does not mask a hidden path no exposed path shows (a sibling whose name merely starts the same is not under it)', () => {
    const exposed = join(dir, 'exposed');
    const argv = bwrapArgv({ ...policy, binds: [exposed], bindsRw: [], hidden: [`${exposed}-rw`] }, run);
    expect(argv).not.toContain(`${exposed}-rw`);
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
