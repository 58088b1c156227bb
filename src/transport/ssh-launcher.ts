// Start `genjob serve --session` on a generator host over ssh (see docs/generator-host.md).
// Every session multiplexes over one control master whose socket sits in a private directory
// (0700, ours, not a symlink), so a drain pays one TCP + key exchange + auth per host. Each ssh
// client gets its own process group, so kill() takes the whole local side down at once.

import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { UsageError } from '../core/errors.js';
import { readText } from '../core/read-text.js';
import type { ServeLauncher, ServeProcess } from './launcher.js';
import { sshEnv } from './ssh-env.js';
import {
  MAX_CONTROL_DIR_BYTES,
  remoteCommandLine,
  type SshTarget,
  sshArgv,
  sshControlArgv,
  sshHostKeyProbeArgv,
  sshOptionArgs,
  sshResolveArgv,
  validateControlDir,
} from './ssh-options.js';

/** Every ssh we start gets the minimal environment of ssh-env.ts, never the worker's whole one. */
function sshSpawnEnv(): { env: Record<string, string>; extendEnv: false } {
  return { env: sshEnv(), extendEnv: false };
}

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
  let resolved: Promise<Resolved> | undefined;
  const resolve = () => {
    resolved ??= resolveConfig(full, destination).catch((err: unknown) => {
      resolved = undefined; // retried on the next call
      throw err;
    });
    return resolved;
  };

  return {
    destination,
    start(args) {
      return startSsh(sshArgv(full, remoteCommandLine(remoteCmd, args)));
    },
    shipmentFacts() {
      facts ??= probeHostKey(full, destination, resolve).catch((err: unknown) => {
        facts = undefined; // a failed probe is retried on the next call
        throw err;
      });
      return facts;
    },
    async account() {
      const r = await resolve();
      return `${r.user}@${r.host}:${r.port}`;
    },
    async close() {
      // Ends the master (and any session still on it); "no master running" is fine.
      await execa('ssh', sshControlArgv(full, 'exit'), {
        ...sshSpawnEnv(),
        reject: false,
        stdin: 'ignore',
        timeout: 10_000,
      });
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

/** The control master alone: no session (-N); the key exchange shows in its log (FingerprintHash pinned). */
function sshMasterArgv(target: SshTarget): string[] {
  return ['-N', '-o', 'FingerprintHash=sha256', ...sshOptionArgs(target), '--', target.host];
}

function startSsh(argv: string[]): ServeProcess {
  const child = execa('ssh', argv, {
    ...sshSpawnEnv(),
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

interface Resolved {
  /** The user ssh logs in as. */
  user: string;
  host: string;
  port: number;
  /** The name known_hosts is searched for. */
  knownHostsName: string;
  /** The control socket, %C expanded. */
  controlPath: string | undefined;
  /** Whether a master outlives its first client (ControlPersist), so it can be started on its own. */
  persists: boolean;
}

/**
 * The host key ssh verified. Normally read from the control master's own key exchange: we start the
 * master ourselves (-N, verbose, logging to a private file) and the sessions then multiplex over it,
 * so the fingerprint costs no extra connection. When a master already runs (or ControlPersist is
 * off) a separate verbose connection is made just to read it, as before.
 */
async function probeHostKey(
  target: SshTarget,
  destination: string,
  resolve: () => Promise<Resolved>,
): Promise<Record<string, unknown>> {
  const resolved = await resolve();
  if (resolved.persists && resolved.controlPath !== undefined && !exists(resolved.controlPath)) {
    const facts = await hostKeyFromMaster(target, destination, resolved);
    if (facts !== null) return { ...facts };
  }
  return { ...(await hostKeyFromProbe(target, destination, resolved)) };
}

function exists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * Start the control master (`ssh -v -E <log> -N`; with ControlPersist it forks to the background once
 * authenticated) and read from its log the key it verified. null when the log shows no key exchange:
 * another process's master won the socket in the meantime and this ssh was only its client.
 */
async function hostKeyFromMaster(
  target: SshTarget,
  destination: string,
  resolved: Resolved,
): Promise<HostKeyFacts | null> {
  const log = path.join(target.controlDir, `master-${process.pid}-${randomBytes(6).toString('hex')}.log`);
  try {
    const result = await execa('ssh', ['-v', '-E', log, ...sshMasterArgv(target)], {
      ...sshSpawnEnv(),
      stdin: 'ignore',
      stdout: 'ignore',
      reject: false,
      timeout: PROBE_TIMEOUT_MS,
    });
    let text = '';
    try {
      text = readText(log);
    } catch {
      // ssh failed before it opened its log: its stderr says why
    }
    const seen = readSshLog(`${text}\n${String(result.stderr)}`, resolved);
    if (result.exitCode === 0 && seen.found !== undefined) return seen.found;
    if (result.exitCode === 0 && seen.offered === undefined) return null;
    throw connectError(destination, resolved, seen, result);
  } finally {
    rmSync(log, { force: true }); // the master keeps writing to it; the space is freed when it exits
  }
}

/** A fresh connection outside the control master, killed as soon as ssh says the key matched. */
async function hostKeyFromProbe(
  target: SshTarget,
  destination: string,
  resolved: Resolved,
): Promise<HostKeyFacts> {
  const child = execa('ssh', sshHostKeyProbeArgv(target), {
    ...sshSpawnEnv(),
    stdin: 'ignore',
    stdout: 'ignore',
    buffer: false,
    reject: false,
    timeout: PROBE_TIMEOUT_MS,
  });
  let text = '';
  let seen: SshLog = { messages: [] };
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (data: string) => {
    text += data;
    seen = readSshLog(text.slice(0, text.lastIndexOf('\n') + 1), resolved);
    if (seen.found !== undefined) child.kill('SIGKILL');
  });
  const result = await child;
  seen = readSshLog(text, resolved);
  if (seen.found !== undefined) return seen.found;
  throw connectError(destination, resolved, seen, result);
}

interface SshLog {
  /** The key the server offered, from the last "Server host key" line before the match. */
  offered?: { type: string; fingerprint: string };
  /** Set once ssh said that key is known and matches for our known_hosts name. */
  found?: HostKeyFacts;
  /** The lines that are not debug output (errors and warnings), for the error message. */
  messages: string[];
}

/** What ssh verified: the "Server host key" line just before "Host '<name>' is known and matches". */
function readSshLog(text: string, resolved: Resolved): SshLog {
  const seen: SshLog = { messages: [] };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    const key = /^debug1: Server host key: (\S+) (SHA256:\S+)/.exec(line);
    if (key !== null && seen.found === undefined) seen.offered = { type: key[1]!, fingerprint: key[2]! };
    const ok =
      /^debug1: Host '(.+)' is known and matches the \S+ host (?:key|certificate)\.$/.exec(line) ??
      /^Warning: Permanently added '(.+)' \(\S+\) to the list of known hosts\.$/.exec(line);
    if (ok !== null && ok[1] === resolved.knownHostsName && seen.offered !== undefined && !seen.found) {
      seen.found = { host: resolved.host, port: resolved.port, ...hostKey(seen.offered) };
    }
    if (line !== '' && !line.startsWith('debug') && !line.startsWith('OpenSSH_')) seen.messages.push(line);
  }
  return seen;
}

function connectError(
  destination: string,
  resolved: Resolved,
  seen: SshLog,
  result: { timedOut: boolean; exitCode?: number | undefined; signal?: string | undefined },
): UsageError {
  const said = seen.messages.join(' ').trim().slice(-500);
  const { offered } = seen;
  if (/Host key verification failed|HOST IDENTIFICATION HAS CHANGED|host key is known for/i.test(said)) {
    return new UsageError(
      'EGJ_SSH_HOST_KEY',
      `${destination}: ssh could not verify the host key of ${resolved.knownHostsName} against known_hosts` +
        (offered === undefined ? '' : ` (server offered ${offered.type} ${offered.fingerprint})`) +
        '; genjob never disables host key checking: confirm the fingerprint out of band, then add the key ' +
        `to known_hosts. ssh said: ${said}`,
    );
  }
  return new UsageError(
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

/** `ssh -G`: the real host name and port, the name known_hosts is searched for, the control socket. */
async function resolveConfig(target: SshTarget, destination: string): Promise<Resolved> {
  const r = await execa('ssh', sshResolveArgv(target), {
    ...sshSpawnEnv(),
    reject: false,
    stdin: 'ignore',
    timeout: 10_000,
  });
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
  const controlPath = conf.get('controlpath');
  const persist = conf.get('controlpersist');
  return {
    user: conf.get('user') ?? target.user ?? '',
    host,
    port,
    knownHostsName,
    controlPath: controlPath === undefined || controlPath === 'none' ? undefined : controlPath,
    persists: persist !== undefined && persist !== 'no' && persist !== '0',
  };
}
