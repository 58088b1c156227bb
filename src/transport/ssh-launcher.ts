// Start `genjob serve --session` on a generator host over ssh (see docs/generator-host.md).
// Every session multiplexes over one control master whose socket sits in a private directory
// (0700, ours, not a symlink), so a drain pays one TCP + key exchange + auth per host. Each ssh
// client gets its own process group, so kill() takes the whole local side down at once.

import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { UsageError } from '../core/errors.js';
import type { ServeLauncher, ServeProcess } from './launcher.js';
import {
  MAX_CONTROL_DIR_BYTES,
  remoteCommandLine,
  type SshTarget,
  sshArgv,
  sshControlArgv,
  sshHostKeyProbeArgv,
  sshResolveArgv,
  validateControlDir,
} from './ssh-options.js';

/** The default remote command; a custom one (e.g. an absolute path to genjob) must end the same way. */
export const DEFAULT_REMOTE_CMD = 'genjob serve --session';
const PROBE_TIMEOUT_MS = 60_000;

export type SshLauncherTarget = Omit<SshTarget, 'controlDir'> & { remoteCmd?: string };

export function sshLauncher(target: SshLauncherTarget, controlDir: string): ServeLauncher {
  const { remoteCmd = DEFAULT_REMOTE_CMD, ...rest } = target;
  const full: SshTarget = { ...rest, controlDir: path.resolve(controlDir) };
  ensureControlDir(full.controlDir);
  sshArgv(full, remoteCmd); // validate target and options now, not at the first start()
  const destination = destinationOf(full);
  let facts: Promise<Record<string, unknown>> | undefined;

  return {
    destination,
    start(args) {
      return startSsh(sshArgv(full, remoteCommandLine(remoteCmd, args)));
    },
    shipmentFacts() {
      facts ??= probeHostKey(full, destination).catch((err: unknown) => {
        facts = undefined; // a failed probe is retried on the next call
        throw err;
      });
      return facts;
    },
    async close() {
      // Ends the master (and any session still on it); "no master running" is fine.
      await execa('ssh', sshControlArgv(full, 'exit'), { reject: false, stdin: 'ignore', timeout: 10_000 });
    },
  };
}

/** "user@host:port" as configured, or the bare host (an alias from ssh config). */
export function destinationOf(target: Pick<SshTarget, 'host' | 'user' | 'port'>): string {
  return `${target.user === undefined ? '' : `${target.user}@`}${target.host}${target.port === undefined ? '' : `:${target.port}`}`;
}

/**
 * A control dir for a .gen directory: `<genDir>/ssh` when that fits a unix socket path, else a
 * per-user directory in the system temp dir named by a hash of genDir (checked the same way).
 */
export function controlDirFor(genDir: string): string {
  const preferred = path.join(path.resolve(genDir), 'ssh');
  if (Buffer.byteLength(preferred) <= MAX_CONTROL_DIR_BYTES) return preferred;
  const tag = createHash('sha256').update(path.resolve(genDir)).digest('hex').slice(0, 12);
  return path.join(os.tmpdir(), `genjob-ssh-${process.getuid?.() ?? 'u'}-${tag}`);
}

/** Creates the control dir (0700) if missing; refuses a symlink, a non-directory, another owner, or g/o write. */
export function ensureControlDir(dir: string): void {
  validateControlDir(dir);
  const refuse = (rule: string): never => {
    throw new UsageError('EGJ_SSH_CONTROL_DIR', `ssh control dir ${dir}: ${rule}`);
  };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    refuse(`cannot create it (${(err as Error).message})`);
  }
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) refuse('is a symlink; it must be a real private directory');
  if (!st.isDirectory()) refuse('is not a directory');
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) refuse(`is owned by uid ${st.uid}, not by us (uid ${uid})`);
  if ((st.mode & 0o022) !== 0) {
    refuse(`is group- or world-writable (mode ${(st.mode & 0o777).toString(8)}); chmod 700 it`);
  }
}

function startSsh(argv: string[]): ServeProcess {
  const child = execa('ssh', argv, {
    buffer: false,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    detached: true,
    reject: false,
  });
  const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
    // 'exit' comes first; execa's promise also waits for stdio to end, and it alone reports a
    // spawn failure (no pid, no 'exit'). Whichever settles first wins; neither ever rejects.
    child.once('exit', (exitCode, signal) => resolve({ exitCode, signal }));
    child.then(
      (r) => resolve({ exitCode: r.exitCode ?? null, signal: r.signal ?? null }),
      () => resolve({ exitCode: null, signal: null }),
    );
  });
  return {
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    kill() {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // ESRCH: the group is already gone.
      }
    },
    exited,
  };
}

interface HostKeyFacts {
  host: string;
  port: number;
  host_key_type: string;
  host_key_fingerprint: string;
}

/** What ssh verified: the "Server host key" line just before "Host '<name>' is known and matches". */
async function probeHostKey(target: SshTarget, destination: string): Promise<Record<string, unknown>> {
  const resolved = await resolveConfig(target, destination);
  const child = execa('ssh', sshHostKeyProbeArgv(target), {
    stdin: 'ignore',
    stdout: 'ignore',
    buffer: false,
    reject: false,
    timeout: PROBE_TIMEOUT_MS,
  });
  let offered: { type: string; fingerprint: string } | undefined;
  let found: HostKeyFacts | undefined;
  const messages: string[] = [];
  let partial = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (data: string) => {
    const lines = (partial + data).split('\n');
    partial = lines.pop() ?? '';
    for (const raw of lines) {
      const line = raw.replace(/\r$/, '');
      const key = /^debug1: Server host key: (\S+) (SHA256:\S+)/.exec(line);
      if (key !== null) offered = { type: key[1]!, fingerprint: key[2]! };
      const ok =
        /^debug1: Host '(.+)' is known and matches the \S+ host (?:key|certificate)\.$/.exec(line) ??
        /^Warning: Permanently added '(.+)' \(\S+\) to the list of known hosts\.$/.exec(line);
      if (ok !== null && ok[1] === resolved.knownHostsName && offered !== undefined && found === undefined) {
        found = { host: resolved.host, port: resolved.port, ...hostKey(offered) };
        child.kill('SIGKILL');
      }
      if (!line.startsWith('debug')) messages.push(line);
    }
  });
  const result = await child;
  if (found !== undefined) return { ...found };
  const said = messages.join(' ').trim().slice(-500);
  if (/Host key verification failed|HOST IDENTIFICATION HAS CHANGED|host key is known for/i.test(said)) {
    throw new UsageError(
      'EGJ_SSH_HOST_KEY',
      `${destination}: ssh could not verify the host key of ${resolved.knownHostsName} against known_hosts` +
        (offered === undefined ? '' : ` (server offered ${offered.type} ${offered.fingerprint})`) +
        '; genjob never disables host key checking: confirm the fingerprint out of band, then add the key ' +
        `to known_hosts. ssh said: ${said}`,
    );
  }
  throw new UsageError(
    'EGJ_SSH_CONNECT',
    `${destination}: ssh could not connect to ${resolved.host}:${resolved.port}` +
      (result.timedOut
        ? ` within ${PROBE_TIMEOUT_MS / 1000} s`
        : ` (exit ${result.exitCode ?? result.signal})`) +
      `: ${said || 'no message'}`,
  );
}

function hostKey(offered: { type: string; fingerprint: string }) {
  return { host_key_type: offered.type, host_key_fingerprint: offered.fingerprint };
}

/** `ssh -G`: the real host name and port, and the name known_hosts is searched for. */
async function resolveConfig(
  target: SshTarget,
  destination: string,
): Promise<{ host: string; port: number; knownHostsName: string }> {
  const r = await execa('ssh', sshResolveArgv(target), { reject: false, stdin: 'ignore', timeout: 10_000 });
  if (r.exitCode !== 0) {
    throw new UsageError(
      'EGJ_SSH_CONFIG',
      `${destination}: ssh -G failed (exit ${r.exitCode ?? r.signal}): ${String(r.stderr).trim().slice(-500)}`,
    );
  }
  const conf = new Map<string, string>();
  for (const line of String(r.stdout).split('\n')) {
    const sp = line.indexOf(' ');
    if (sp > 0 && !conf.has(line.slice(0, sp))) conf.set(line.slice(0, sp), line.slice(sp + 1).trim());
  }
  const host = conf.get('hostname') ?? target.host;
  const port = Number(conf.get('port') ?? 22);
  const alias = conf.get('hostkeyalias');
  const knownHostsName =
    alias !== undefined && alias !== 'none' ? alias : port === 22 ? host : `[${host}]:${port}`;
  return { host, port, knownHostsName };
}
