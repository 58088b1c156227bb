// A real OpenSSH server on 127.0.0.1 (only) for the ssh stages of the benchmark: a plain-ESM port
// of test/helpers/sshd.ts (fresh ed25519 host and client keys, a free high port, a client config with
// the alias 'genjob-bench', everything in one temp dir that stop() removes after killing sshd and the
// session processes it forked, by PID, never by name). Remote commands run root's login shell, so
// they pay its rc files (~/.bashrc with pyenv init here): the baseline pays exactly the same.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const HOST = '127.0.0.1';
export const ALIAS = 'genjob-bench';
const READY_TIMEOUT_MS = 10_000;

export async function startSshd() {
  execFileSync('install', ['-d', '-m', '0755', '/run/sshd']);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gjb-sshd-'));
  try {
    return await startIn(tmp);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

function keygen(file, comment) {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
}

async function startIn(tmp) {
  const { username: user } = os.userInfo();
  const hostKey = path.join(tmp, 'host_ed25519');
  const identityFile = path.join(tmp, 'id_ed25519');
  keygen(hostKey, 'genjob-bench-host');
  keygen(identityFile, 'genjob-bench-client');
  const authorizedKeys = path.join(tmp, 'authorized_keys');
  writeFileSync(authorizedKeys, readFileSync(`${identityFile}.pub`), { mode: 0o600 });
  let lastError;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const config = path.join(tmp, 'sshd_config');
    writeFileSync(
      config,
      [
        `ListenAddress ${HOST}`,
        `Port ${port}`,
        `HostKey ${hostKey}`,
        `AuthorizedKeysFile ${authorizedKeys}`,
        `PidFile ${path.join(tmp, 'sshd.pid')}`,
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
        'MaxSessions 64',
        'MaxStartups 64',
        '',
      ].join('\n'),
    );
    const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (d) => {
      log = (log + d).slice(-8192);
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await waitListening(port, child, () => log);
    } catch (err) {
      lastError = err;
      killPid(child.pid);
      await exited;
      if (/Address already in use|Cannot bind/i.test(log)) continue;
      throw err;
    }
    const hostPub = readFileSync(`${hostKey}.pub`, 'utf8').trim().split(/\s+/);
    const knownHostsFile = path.join(tmp, 'known_hosts');
    writeFileSync(knownHostsFile, `[${HOST}]:${port} ${hostPub[0]} ${hostPub[1]}\n`);
    const sshConfigFile = path.join(tmp, 'ssh_config');
    writeFileSync(
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
        '  BatchMode yes',
        '',
      ].join('\n'),
    );
    let stopped;
    return {
      host: HOST,
      port,
      user,
      alias: ALIAS,
      sshConfigFile,
      tmp,
      stop() {
        stopped ??= (async () => {
          // session processes are sshd's children but setsid() out of its group: collect them first
          for (const pid of descendants(child.pid)) killPid(pid);
          killPid(child.pid);
          await exited;
          rmSync(tmp, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  }
  throw new Error('sshd: no free port after 5 attempts', { cause: lastError });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitListening(port, child, log) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`sshd exited before listening: ${log().trim()}`);
    if (await accepts(port)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd on ${HOST}:${port} not listening after ${READY_TIMEOUT_MS} ms: ${log().trim()}`);
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** PIDs descended from `root`, from the ppid field of /proc/<pid>/stat. */
function descendants(root) {
  if (root === undefined) return [];
  const parentOf = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited while we looked
    }
  }
  const found = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const parent = frontier.pop();
    for (const [pid, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(pid);
        frontier.push(pid);
      }
    }
  }
  return found;
}

function killPid(pid) {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
