// A real OpenSSH server on 127.0.0.1 (only) for transport tests: fresh ed25519 host and client keys,
// a free high port, a client config with the alias 'genjob-test', everything in one temp dir that
// stop() removes after killing sshd and the session processes it forked (by PID, never by name).
// The remote command runs the current user's login shell, so it pays that user's rc files: root's
// ~/.bashrc here (pyenv init) costs ~0.5 s per command. We never edit it; tests just pay it.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll } from 'vitest';

export interface SshdHandle {
  host: '127.0.0.1';
  port: number;
  user: string;
  identityFile: string;
  knownHostsFile: string;
  /** Client config: Host alias `hostAlias` → 127.0.0.1, Port, User, IdentityFile, known_hosts, strict checking. */
  sshConfigFile: string;
  hostAlias: string;
  /** The server's ed25519 host public key file (for `ssh-keygen -lf`). */
  hostKeyPubFile: string;
  /** The remote user's home directory (the real one: sshd uses the passwd entry). */
  homeDir: string;
  tmp: string;
  stop(): Promise<void>;
}

export interface SshdOptions {
  /**
   * Shell text sourced (by /bin/sh) before every remote command, through a ForceCommand wrapper,
   * to simulate a noisy or slow remote rc file without touching the real ~/.bashrc. With it, the
   * original command runs under /bin/sh -c instead of the login shell.
   */
  loginShellRc?: string;
}

const HOST = '127.0.0.1';
const ALIAS = 'genjob-test';
const READY_TIMEOUT_MS = 10_000;
const PORT_ATTEMPTS = 5;

export async function startSshd(opts: SshdOptions = {}): Promise<SshdHandle> {
  await execa('install', ['-d', '-m', '0755', '/run/sshd']);
  // Short prefix: ssh control sockets live under test temp dirs and sun_path is 108 bytes.
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'gj-sshd-'));
  try {
    return await startIn(tmp, opts);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

async function startIn(tmp: string, opts: SshdOptions): Promise<SshdHandle> {
  const { username: user, homedir: homeDir } = os.userInfo();
  const hostKey = path.join(tmp, 'host_ed25519');
  const identityFile = path.join(tmp, 'id_ed25519');
  await keygen(hostKey, 'genjob-test-host');
  await keygen(identityFile, 'genjob-test-client');
  const authorizedKeys = path.join(tmp, 'authorized_keys');
  await writeFile(authorizedKeys, await readFile(`${identityFile}.pub`), { mode: 0o600 });

  let forceCommand: string | undefined;
  if (opts.loginShellRc !== undefined) {
    const rc = path.join(tmp, 'login_rc');
    forceCommand = path.join(tmp, 'force_command.sh');
    await writeFile(rc, opts.loginShellRc, { mode: 0o644 });
    await writeFile(forceCommand, `#!/bin/sh\n. '${rc}'\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n`, {
      mode: 0o755,
    });
  }

  let lastError: unknown;
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    const config = path.join(tmp, 'sshd_config');
    await writeFile(config, sshdConfig({ tmp, port, hostKey, authorizedKeys, forceCommand }));
    const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let log = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      log = (log + d).slice(-8192);
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitListening(port, child, () => log);
    } catch (err) {
      lastError = err;
      killTree(child.pid);
      await exited;
      if (/Address already in use|Cannot bind/i.test(log)) continue;
      throw err;
    }
    const hostPub = (await readFile(`${hostKey}.pub`, 'utf8')).trim().split(/\s+/);
    const knownHostsFile = path.join(tmp, 'known_hosts');
    await writeFile(knownHostsFile, `[${HOST}]:${port} ${hostPub[0]} ${hostPub[1]}\n`);
    const sshConfigFile = path.join(tmp, 'ssh_config');
    await writeFile(
      sshConfigFile,
      [
        `Host ${ALIAS}`,
        `  HostName ${HOST}`,
        `  Port ${port}`,
        `  User ${user}`,
        `  IdentityFile ${identityFile}`,
        '  IdentitiesOnly yes',
        `  UserKnownHostsFile ${knownHostsFile}`,
        '  GlobalKnownHostsFile /dev/null',
        '  StrictHostKeyChecking yes',
        '  UpdateHostKeys no',
        '  CheckHostIP no',
        '',
      ].join('\n'),
    );
    let stopped: Promise<void> | undefined;
    return {
      host: HOST,
      port,
      user,
      identityFile,
      knownHostsFile,
      sshConfigFile,
      hostAlias: ALIAS,
      hostKeyPubFile: `${hostKey}.pub`,
      homeDir,
      tmp,
      stop() {
        stopped ??= (async () => {
          // Session processes are sshd's children but setsid() out of its group: collect them first.
          for (const pid of await descendants(child.pid)) killTree(pid);
          killTree(child.pid);
          await exited;
          await rm(tmp, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  }
  throw new Error(`sshd: no free port after ${PORT_ATTEMPTS} attempts`, { cause: lastError });
}

/** Registers beforeAll/afterAll for a describe block; call the returned getter inside tests. */
export function useSshd(opts?: SshdOptions): () => SshdHandle {
  let handle: SshdHandle | undefined;
  beforeAll(async () => {
    handle = await startSshd(opts);
  });
  afterAll(async () => {
    await handle?.stop();
  });
  return () => {
    if (handle === undefined) throw new Error('useSshd: sshd is not running (use the getter inside a test)');
    return handle;
  };
}

function sshdConfig(o: {
  tmp: string;
  port: number;
  hostKey: string;
  authorizedKeys: string;
  forceCommand: string | undefined;
}): string {
  return [
    `ListenAddress ${HOST}`,
    `Port ${o.port}`,
    `HostKey ${o.hostKey}`,
    `AuthorizedKeysFile ${o.authorizedKeys}`,
    `PidFile ${path.join(o.tmp, 'sshd.pid')}`,
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'PermitRootLogin prohibit-password',
    'StrictModes no',
    'UsePAM no',
    'AllowAgentForwarding no',
    'AllowTcpForwarding no',
    'X11Forwarding no',
    'PermitUserEnvironment no',
    'PermitUserRC no',
    'PrintMotd no',
    'PrintLastLog no',
    ...(o.forceCommand === undefined ? [] : [`ForceCommand ${o.forceCommand}`]),
    '',
  ].join('\n');
}

async function keygen(file: string, comment: string): Promise<void> {
  await execa('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('freePort: no address'));
      });
    });
  });
}

async function waitListening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`sshd on ${HOST}:${port} exited before listening: ${log().trim()}`);
    }
    if (await accepts(port)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd on ${HOST}:${port} not listening after ${READY_TIMEOUT_MS} ms: ${log().trim()}`);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** PIDs descended from `root` (children first found via /proc/<pid>/stat's ppid field). */
async function descendants(root: number | undefined): Promise<number[]> {
  if (root === undefined) return [];
  const parentOf = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the parenthesised command name, which may itself contain spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // The process exited while we looked.
    }
  }
  const found: number[] = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const parent = frontier.pop()!;
    for (const [pid, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(pid);
        frontier.push(pid);
      }
    }
  }
  return found;
}

function killTree(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
