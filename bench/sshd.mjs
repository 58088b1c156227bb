// A real OpenSSH server on 127.0.0.1 (only), for the ssh stages of the benchmark and (through
// test/helpers/sshd.ts) the transport tests: fresh ed25519 host and client keys, a free high port, a
// client config naming one Host alias, everything in one temp dir that stop() removes after killing
// sshd and the session processes it forked (by PID, never by name). Remote commands run the user's
// shell without its rc files: bash sources ~/.bashrc for ssh sessions only at SHLVL < 2, so the server
// sets SHLVL=1. A machine's rc (root's ~/.bashrc runs `pyenv init` here, which takes a lock that a
// session killed mid-rehash leaves behind, stalling every later session 60 s) is never edited, only skipped.
// Plain ESM so the benchmark runs it without a build; bench/sshd.d.mts types it for the tests.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 10_000;
const PORT_ATTEMPTS = 5;

/** The benchmark's server: room for its concurrent sessions, and a client that never prompts. */
const BENCH = { alias: 'genjob-bench', maxSessions: 64, batchMode: true };

/** Start sshd; with no options, the benchmark's (see sshd.d.mts for each option). */
export async function startSshd(opts = BENCH) {
  if (!existsSync('/usr/sbin/sshd') || !existsSync('/usr/bin/ssh')) {
    throw new Error(
      'the ssh tests need OpenSSH: apt-get install openssh-server openssh-client (.ci/run does this)',
    );
  }
  await promisify(execFile)('install', ['-d', '-m', '0755', '/run/sshd']);
  // Short prefix: ssh control sockets live under test temp dirs and sun_path is 108 bytes.
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'gj-sshd-'));
  try {
    return await startIn(tmp, opts);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

async function startIn(tmp, opts) {
  const { alias } = opts;
  const { username: user, homedir: homeDir } = os.userInfo();
  const hostKey = path.join(tmp, 'host_ed25519');
  const identityFile = path.join(tmp, 'id_ed25519');
  await keygen(hostKey, `${alias}-host`);
  await keygen(identityFile, `${alias}-client`);
  const authorizedKeys = path.join(tmp, 'authorized_keys');
  await writeFile(authorizedKeys, await readFile(`${identityFile}.pub`), { mode: 0o600 });

  let forceCommand;
  if (opts.loginShellRc !== undefined) {
    const rc = path.join(tmp, 'login_rc');
    forceCommand = path.join(tmp, 'force_command.sh');
    await writeFile(rc, opts.loginShellRc, { mode: 0o644 });
    await writeFile(forceCommand, `#!/bin/sh\n. '${rc}'\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n`, {
      mode: 0o755,
    });
  }

  let lastError;
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    const config = path.join(tmp, 'sshd_config');
    await writeFile(config, sshdConfig({ ...opts, tmp, port, hostKey, authorizedKeys, forceCommand }));
    const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (d) => {
      log = (log + d).slice(-8192);
    });
    const exited = new Promise((resolve) => child.once('exit', () => resolve()));
    try {
      await waitListening(port, child, () => log);
    } catch (err) {
      lastError = err;
      killPid(child.pid);
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
        `Host ${alias}`,
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
        ...(opts.batchMode ? ['  BatchMode yes'] : []),
        '',
      ].join('\n'),
    );
    let stopped;
    return {
      host: HOST,
      port,
      user,
      alias,
      identityFile,
      knownHostsFile,
      sshConfigFile,
      hostKeyPubFile: `${hostKey}.pub`,
      homeDir,
      tmp,
      stop() {
        stopped ??= (async () => {
          // Session processes are sshd's children but setsid() out of its group: collect them first.
          for (const pid of await descendants(child.pid)) killPid(pid);
          killPid(child.pid);
          await exited;
          await rm(tmp, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  }
  throw new Error(`sshd: no free port after ${PORT_ATTEMPTS} attempts`, { cause: lastError });
}

function sshdConfig(o) {
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
    // Skip the user's ~/.bashrc in sessions (see the header): the tests' hosts are clean machines.
    'SetEnv SHLVL=1',
    // sftp for sshfs (test/e2e/shared-gen-sshfs.test.ts mounts a shared .gen/ through this server)
    'Subsystem sftp internal-sftp',
    ...(o.maxSessions === undefined ? [] : [`MaxSessions ${o.maxSessions}`, `MaxStartups ${o.maxSessions}`]),
    ...(o.forceCommand === undefined ? [] : [`ForceCommand ${o.forceCommand}`]),
    ...(o.acceptEnv === undefined ? [] : [`AcceptEnv ${o.acceptEnv}`]),
    '',
  ].join('\n');
}

async function keygen(file, comment) {
  await promisify(execFile)('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
}

function freePort() {
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

async function waitListening(port, child, log) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`sshd on ${HOST}:${port} exited before listening: ${log().trim()}`);
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

/** PIDs descended from `root` (children found via the ppid field of /proc/<pid>/stat). */
async function descendants(root) {
  if (root === undefined) return [];
  const parentOf = new Map();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the parenthesised command name, which may itself contain spaces.
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // The process exited while we looked.
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
    // Already gone.
  }
}
