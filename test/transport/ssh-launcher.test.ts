import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ServeLauncher, ServeProcess } from '../../src/transport/launcher.js';
import {
  controlDirFor,
  DEFAULT_REMOTE_CMD,
  ensureControlDir,
  type SshLauncherTarget,
  sshLauncher,
} from '../../src/transport/ssh-launcher.js';
import {
  remoteCommandLine,
  type SshTarget,
  shellQuote,
  sshArgv,
  sshControlArgv,
  validateSshOption,
} from '../../src/transport/ssh-options.js';
import { useSshd } from '../helpers/sshd.js';

const CONTROL = '/tmp/gj-ctl';
const base: SshTarget = { host: 'gen.example', options: [], controlDir: CONTROL };

function optionValues(argv: string[]): string[] {
  return argv.flatMap((a, i) => (argv[i - 1] === '-o' ? [a] : []));
}

describe('sshArgv', () => {
  it('pins batch mode, forwarding off and the control socket before the user options, defaults after', () => {
    const argv = sshArgv({ ...base, options: ['ConnectTimeout=3', 'ProxyJump=bastion'] }, 'genjob serve');
    expect(argv[0]).toBe('-T');
    expect(optionValues(argv)).toEqual([
      'BatchMode=yes',
      'ForwardAgent=no',
      'ForwardX11=no',
      'ClearAllForwardings=yes',
      'ControlMaster=auto',
      `ControlPath=${CONTROL}/%C`,
      'ConnectTimeout=3',
      'ProxyJump=bastion',
      'ControlPersist=60',
      'ServerAliveInterval=15',
      'ServerAliveCountMax=2',
      'ConnectTimeout=15',
    ]);
    expect(argv.slice(-3)).toEqual(['--', 'gen.example', 'genjob serve']);
  });

  it('never disables host key checking by default', () => {
    expect(sshArgv(base, 'x').join(' ')).not.toMatch(/StrictHostKeyChecking|UserKnownHostsFile/);
  });

  it.each([
    {
      name: 'config file, identity, port and user as flags',
      target: { configFile: '/c', identity: '/k', port: 2222, user: 'gen' },
      flags: ['-F', '/c', '-i', '/k', '-p', '2222', '-l', 'gen'],
    },
    { name: 'no flags for a bare alias', target: {}, flags: [] },
  ])('passes $name', ({ target, flags }) => {
    const argv = sshArgv({ ...base, ...target }, 'x');
    const start = argv.indexOf(`ControlPath=${CONTROL}/%C`) + 1;
    expect(argv.slice(start, start + flags.length)).toEqual(flags);
    expect(argv.slice(-3)).toEqual(['--', 'gen.example', 'x']);
  });

  it.each([
    { option: 'ConnectTimeout', rule: /KEY=VALUE/ },
    { option: '=yes', rule: /KEY=VALUE/ },
    { option: 'ConnectTimeout=', rule: /empty value/ },
    { option: 'Connect-Timeout=3', rule: /not an ssh option name/ },
    { option: 'ConnectTimeout=3\nProxyCommand=sh', rule: /newline/ },
    { option: 'BatchMode=no', rule: /fixed by genjob/ },
    { option: 'controlpath=/tmp/x', rule: /fixed by genjob/ },
    { option: 'ForwardAgent=yes', rule: /never forwards/ },
    { option: 'LocalForward=8080 localhost:80', rule: /never forwards/ },
    { option: 'ProxyCommand=nc %h %p', rule: /local commands.*ProxyJump is allowed/ },
    { option: 'LocalCommand=touch /tmp/x', rule: /local commands/ },
    { option: 'PermitLocalCommand=yes', rule: /local commands/ },
    { option: 'KnownHostsCommand=/bin/true', rule: /local commands/ },
    { option: 'RequestTTY=force', rule: /without a tty/ },
    { option: 'RemoteCommand=id', rule: /without a tty/ },
    { option: 'SendEnv=*', rule: /environment .* never goes to a host/ },
    { option: 'sendenv=AWS_*', rule: /environment/ },
    { option: 'SendEnv *', rule: /environment/ },
    { option: 'SENDENV = *', rule: /environment/ },
    { option: ' SendEnv\t*', rule: /environment/ },
    { option: 'SetEnv=AWS_SECRET_ACCESS_KEY=x', rule: /environment/ },
    { option: 'setenv FOO=bar', rule: /environment/ },
    { option: 'LocalCommand touch /tmp/x', rule: /local commands/ },
    { option: 'permitlocalcommand yes', rule: /local commands/ },
    { option: 'PERMITLOCALCOMMAND=yes', rule: /local commands/ },
  ])('refuses --ssh-option $option with EGJ_BAD_SSH_OPTION', ({ option, rule }) => {
    expect(() => validateSshOption(option)).toThrow(rule);
    expect(() => sshArgv({ ...base, options: [option] }, 'x')).toThrow(
      expect.objectContaining({ code: 'EGJ_BAD_SSH_OPTION', exitCode: 2 }),
    );
  });

  it.each([
    'ProxyJump=user@bastion:2222',
    'StrictHostKeyChecking=accept-new',
    'UserKnownHostsFile=/etc/genjob/known_hosts',
    'ConnectTimeout=30',
    'ControlPersist=no',
    'ConnectTimeout 30',
  ])('accepts --ssh-option %s', (option) => {
    expect(() => validateSshOption(option)).not.toThrow();
  });

  it.each([
    { name: 'a host starting with -', target: { host: '-oProxyCommand=sh' }, code: 'EGJ_BAD_SSH_TARGET' },
    { name: 'a host with a space', target: { host: 'a b' }, code: 'EGJ_BAD_SSH_TARGET' },
    { name: 'a host with a port (box:2222)', target: { host: 'box:2222' }, code: 'EGJ_BAD_SSH_TARGET' },
    { name: 'a user starting with -', target: { user: '-x' }, code: 'EGJ_BAD_SSH_TARGET' },
    { name: 'port 0', target: { port: 0 }, code: 'EGJ_BAD_SSH_TARGET' },
    { name: 'port 70000', target: { port: 70000 }, code: 'EGJ_BAD_SSH_TARGET' },
    { name: 'a relative control dir', target: { controlDir: 'ctl' }, code: 'EGJ_SSH_CONTROL_DIR' },
    { name: 'a control dir with %', target: { controlDir: '/tmp/%h' }, code: 'EGJ_SSH_CONTROL_DIR' },
    {
      name: 'a control dir too long for a socket path',
      target: { controlDir: `/tmp/${'d'.repeat(45)}` },
      code: 'EGJ_SSH_CONTROL_DIR',
    },
  ])('refuses $name', ({ target, code }) => {
    expect(() => sshArgv({ ...base, ...target }, 'x')).toThrow(expect.objectContaining({ code }));
  });

  it('says where the port of box:2222 goes, and takes an IPv6 address as a host', () => {
    expect(() => sshArgv({ ...base, host: 'box:2222' }, 'x')).toThrow(
      'ssh target "box:2222": ssh takes no host:port: give the port apart (--port 2222, or Port in a Host entry of the ssh config)',
    );
    expect(sshArgv({ ...base, host: '::1' }, 'x')).toContain('::1');
    expect(sshArgv({ ...base, host: 'fe80::1%eth0' }, 'x')).toContain('fe80::1%eth0');
  });

  it('asks the control master with the same options, hence the same socket', () => {
    const argv = sshControlArgv({ ...base, port: 2222 }, 'check');
    expect(argv.slice(0, 2)).toEqual(['-O', 'check']);
    expect(argv.slice(2)).toEqual(sshArgv({ ...base, port: 2222 }, 'x').slice(0, -1));
  });

  it.each([
    { word: 'plain', quoted: `'plain'` },
    { word: 'two words', quoted: `'two words'` },
    { word: `it's`, quoted: `'it'\\''s'` },
    { word: '$HOME `id` "q" \\n', quoted: `'$HOME \`id\` "q" \\n'` },
    { word: '', quoted: `''` },
  ])('single-quotes $word as $quoted', ({ word, quoted }) => {
    expect(shellQuote(word)).toBe(quoted);
  });

  it('appends quoted arguments to the remote command as the user wrote it', () => {
    expect(remoteCommandLine('genjob serve --session', ['--generator', `say "hi" $USER's`])).toBe(
      `genjob serve --session '--generator' 'say "hi" $USER'\\''s'`,
    );
  });
});

describe('ensureControlDir', () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'gj-ctl-'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('creates a missing control dir with mode 0700', async () => {
    const dir = path.join(tmp, 'new');
    ensureControlDir(dir);
    expect((await import('node:fs')).statSync(dir).mode & 0o777).toBe(0o700);
  });

  it.each([
    {
      name: 'a world-writable dir',
      make: async (d: string) => mkdir(d, { mode: 0o777 }).then(() => chmod(d, 0o777)),
      rule: /world-writable/,
    },
    {
      name: 'a group-writable dir',
      make: async (d: string) => mkdir(d).then(() => chmod(d, 0o770)),
      rule: /group- or world-writable/,
    },
    { name: 'a symlink to a private dir', make: async (d: string) => symlink(tmp, d), rule: /symlink/ },
    {
      name: 'a regular file',
      make: async (d: string) => writeFile(d, ''),
      rule: /not a directory|cannot create/,
    },
  ])('refuses $name', async ({ name, make, rule }) => {
    const dir = path.join(tmp, name.replaceAll(' ', '-').slice(0, 12));
    await make(dir);
    expect(() => ensureControlDir(dir)).toThrow(rule);
  });

  it('keeps a short .gen/ssh and moves a long one to a per-user temp dir', () => {
    expect(controlDirFor('/r/.gen')).toBe('/r/.gen/ssh');
    const long = controlDirFor(`/home/someone/projects/${'x'.repeat(40)}/.gen`);
    expect(long).toMatch(/^\/tmp\/genjob-ssh-\d+-[0-9a-f]{12}$/);
  });
});

// Real sshd on 127.0.0.1. Every remote command pays the remote user's rc files (root's ~/.bashrc
// here), so these tests take a few hundred ms per connection.
describe('sshLauncher against a real sshd', () => {
  const sshd = useSshd();
  let tmp: string;
  const launchers: ServeLauncher[] = [];
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'gj-ssh-'));
  });
  afterEach(async () => {
    await Promise.all(launchers.splice(0).map((l) => l.close()));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  function launcher(target: Partial<SshLauncherTarget>, dir = 'ctl'): ServeLauncher {
    const l = sshLauncher(
      { host: sshd().hostAlias, configFile: sshd().sshConfigFile, options: [], remoteCmd: 'cat', ...target },
      path.join(tmp, dir),
    );
    launchers.push(l);
    return l;
  }

  async function collect(
    p: ServeProcess,
  ): Promise<{ out: Buffer; err: string; exit: Awaited<ServeProcess['exited']> }> {
    const out: Buffer[] = [];
    let err = '';
    p.stdout.on('data', (d: Buffer) => out.push(d));
    p.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const exit = await p.exited;
    await new Promise((r) => setImmediate(r));
    return { out: Buffer.concat(out), err, exit };
  }

  it('round-trips 1 MiB of random bytes through a remote cat', async () => {
    const p = launcher({}).start([]);
    const data = randomBytes(1024 * 1024);
    const result = collect(p);
    p.stdin.end(data);
    const { out, exit } = await result;
    expect(exit).toEqual({ exitCode: 0, signal: null });
    expect(out.equals(data)).toBe(true);
  });

  it('passes arguments with spaces, quotes and $ to the remote command byte for byte', async () => {
    const args = [`a b`, `it's`, `"$HOME"`, '`id`', '\\n;|&'];
    const p = launcher({ remoteCmd: `printf '%s\\n'` }).start(args);
    p.stdin.end();
    const { out } = await collect(p);
    expect(out.toString()).toBe(args.map((a) => `${a}\n`).join(''));
  });

  it('runs a second session over the control master the first one left', async () => {
    const l = launcher({ remoteCmd: 'echo $SSH_CLIENT' }, 'reuse');
    const first = l.start([]);
    first.stdin.end();
    const a = await collect(first);
    const sockets = await readdir(path.join(tmp, 'reuse'));
    expect(sockets).toEqual([expect.stringMatching(/^[0-9a-f]{40}$/)]);
    const target: SshTarget = {
      host: sshd().hostAlias,
      configFile: sshd().sshConfigFile,
      options: [],
      controlDir: path.join(tmp, 'reuse'),
    };
    const check = await execa('ssh', sshControlArgv(target, 'check'), { reject: false });
    expect(check.stderr).toMatch(/Master running/);
    expect(check.exitCode).toBe(0);
    const second = l.start([]);
    second.stdin.end();
    const b = await collect(second);
    // Same TCP connection, hence the same client source port in SSH_CLIENT.
    expect(b.out.toString()).toBe(a.out.toString());
    expect(a.out.toString()).toMatch(/^127\.0\.0\.1 \d+ \d+\n$/);
  });

  it('closes the control master on close()', async () => {
    const target: SshTarget = {
      host: sshd().hostAlias,
      configFile: sshd().sshConfigFile,
      options: [],
      controlDir: path.join(tmp, 'close'),
    };
    const l = launcher({}, 'close');
    const p = l.start([]);
    p.stdin.end();
    await collect(p);
    expect((await execa('ssh', sshControlArgv(target, 'check'), { reject: false })).exitCode).toBe(0);
    await l.close();
    expect((await execa('ssh', sshControlArgv(target, 'check'), { reject: false })).exitCode).not.toBe(0);
    // the master unlinks its socket as it exits, just after answering `-O exit`: on a loaded box that
    // can come a moment after close() returned (the test's guard stops a wait for ever)
    while ((await readdir(path.join(tmp, 'close'))).length > 0) await new Promise((r) => setTimeout(r, 50));
  });

  it('kills the local ssh process group on kill(), and the remote command then ends', async () => {
    const p = launcher({ remoteCmd: 'echo $$; exec cat' }).start([]);
    const pid = await new Promise<number>((resolve) => {
      p.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    });
    expect(existsSync(`/proc/${pid}`)).toBe(true); // the sshd is local, so its processes are visible
    p.kill();
    expect(await p.exited).toEqual({ exitCode: null, signal: 'SIGKILL' });
    // `cat` never ends by itself: it ends only because the session did (the test's guard stops a wait for ever)
    while (existsSync(`/proc/${pid}`)) await new Promise((r) => setTimeout(r, 100));
  });

  it('refuses an unknown host key in batch mode and never runs the remote command', async () => {
    const empty = path.join(tmp, 'empty_known_hosts');
    await writeFile(empty, '');
    const marker = path.join(tmp, 'marker');
    const l = launcher({ options: [`UserKnownHostsFile=${empty}`], remoteCmd: `touch ${marker}` }, 'unknown');
    const p = l.start([]);
    p.stdin.end();
    const { exit, err } = await collect(p);
    expect(exit.exitCode).toBe(255);
    expect(err).toMatch(/Host key verification failed/);
    expect(existsSync(marker)).toBe(false);
    await expect(l.shipmentFacts()).rejects.toMatchObject({
      code: 'EGJ_SSH_HOST_KEY',
      message: expect.stringMatching(new RegExp(`\\[127\\.0\\.0\\.1\\]:${sshd().port}.*known_hosts`)),
    });
  });

  it('reports the SHA256 fingerprint ssh verified, equal to ssh-keygen -lf of the host key', async () => {
    const expected = (await execa('ssh-keygen', ['-lf', sshd().hostKeyPubFile])).stdout.split(' ')[1];
    const l = launcher({});
    expect(await l.shipmentFacts()).toEqual({
      host: '127.0.0.1',
      port: sshd().port,
      host_key_type: 'ssh-ed25519',
      host_key_fingerprint: expected,
    });
  });

  it('reads the fingerprint from the control master it starts, and the sessions then reuse that connection', async () => {
    const expected = (await execa('ssh-keygen', ['-lf', sshd().hostKeyPubFile])).stdout.split(' ')[1];
    const dir = path.join(tmp, 'facts-master');
    const l = launcher({ remoteCmd: 'echo $SSH_CLIENT' }, 'facts-master');
    expect(await l.shipmentFacts()).toMatchObject({ host_key_fingerprint: expected });
    // the master is up, and its log file is already gone: the socket is all the dir holds
    expect(await readdir(dir)).toEqual([expect.stringMatching(/^[0-9a-f]{40}$/)]);
    const target: SshTarget = {
      host: sshd().hostAlias,
      configFile: sshd().sshConfigFile,
      options: [],
      controlDir: dir,
    };
    expect((await execa('ssh', sshControlArgv(target, 'check'), { reject: false })).exitCode).toBe(0);
    const ports: string[] = [];
    for (let i = 0; i < 2; i++) {
      const p = l.start([]);
      p.stdin.end();
      ports.push((await collect(p)).out.toString());
    }
    expect(ports[0]).toMatch(/^127\.0\.0\.1 \d+ \d+\n$/);
    expect(ports[1]).toBe(ports[0]);
  });

  it('probes the fingerprint over a separate connection when a master already runs', async () => {
    const expected = (await execa('ssh-keygen', ['-lf', sshd().hostKeyPubFile])).stdout.split(' ')[1];
    const l = launcher({}, 'facts-probe');
    const p = l.start([]); // becomes the master
    p.stdin.end('x');
    await collect(p);
    expect(await l.shipmentFacts()).toMatchObject({ host_key_fingerprint: expected });
  });

  it('works with explicit host, port, user and identity and names the destination user@host:port', async () => {
    const s = sshd();
    const l = launcher({
      host: s.host,
      port: s.port,
      user: s.user,
      identity: s.identityFile,
      configFile: '/dev/null',
      options: [
        `UserKnownHostsFile=${s.knownHostsFile}`,
        'GlobalKnownHostsFile=/dev/null',
        'IdentitiesOnly=yes',
      ],
    });
    expect(l.destination).toBe(`${s.user}@127.0.0.1:${s.port}`);
    const p = l.start([]);
    p.stdin.end('hello');
    expect((await collect(p)).out.toString()).toBe('hello');
    expect(await l.shipmentFacts()).toMatchObject({ host: '127.0.0.1', port: s.port });
  });

  it('defaults the remote command to genjob serve --session', () => {
    expect(DEFAULT_REMOTE_CMD).toBe('genjob serve --session');
    expect(launcher({}).destination).toBe('genjob-test');
  });
});

describe('ssh to a host that accepts every variable (AcceptEnv *)', () => {
  const sshd = useSshd({ acceptEnv: '*' });
  const secrets = {
    AWS_SECRET_ACCESS_KEY: 'FAKEawsSECRETforGENJOBtestsEXAMPLE0000000',
    OPENAI_API_KEY: 'sk-FAKE-genjob-test-not-a-key',
    GENJOB_SIGN_KEY: '/fake/sign.key',
  };
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'gj-ssh-env-'));
    Object.assign(process.env, secrets);
  });
  afterAll(async () => {
    for (const name of Object.keys(secrets)) delete process.env[name];
    await rm(tmp, { recursive: true, force: true });
  });

  it('sends none of the worker environment even when the ssh config says SendEnv *', async () => {
    const config = path.join(tmp, 'ssh_config');
    const base = await (await import('node:fs/promises')).readFile(sshd().sshConfigFile, 'utf8');
    await writeFile(config, `${base}  SendEnv *\n`);
    const l = sshLauncher(
      { host: sshd().hostAlias, configFile: config, options: [], remoteCmd: 'env' },
      path.join(tmp, 'ctl'),
    );
    try {
      const p = l.start([]);
      p.stdin.end();
      const out: Buffer[] = [];
      p.stdout.on('data', (d: Buffer) => out.push(d));
      expect(await p.exited).toEqual({ exitCode: 0, signal: null });
      await new Promise((r) => setImmediate(r));
      const remoteEnv = Buffer.concat(out).toString();
      expect(remoteEnv).toMatch(/^PATH=/m); // the remote command ran and printed its environment
      for (const [name, value] of Object.entries(secrets)) {
        expect(remoteEnv).not.toContain(name);
        expect(remoteEnv).not.toContain(value);
      }
    } finally {
      await l.close();
    }
  });
});
