// Build the ssh argv for one remote command; pure, no I/O. ssh keeps the FIRST value it sees for an
// option, so the order is: pinned options (batch mode, no forwarding, our control socket), then the
// target's flags, then the user's --ssh-option values, then defaults the user may override
// (ConnectTimeout, keep-alives, ControlPersist), then ~/.ssh/config. Pinned keys, keys that run local
// code (your own ssh config may set those) and SendEnv/SetEnv are refused in --ssh-option, any form.
import { UsageError } from '../core/errors.js';
import { shellQuote as quoteWord } from '../core/shell-quote.js';

export interface SshTarget {
  host: string;
  user?: string;
  port?: number;
  identity?: string;
  /** Repeatable `-o KEY=VALUE` from --ssh-option. */
  options: string[];
  /** `-F`: replaces ~/.ssh/config. */
  configFile?: string;
  /** Private directory for the control socket (see ssh-launcher.ts). */
  controlDir: string;
}

/** Pinned first, so nothing later (flags, --ssh-option, ssh config) can change them. */
export const PINNED_OPTIONS: readonly string[] = [
  'BatchMode=yes', // a password or passphrase prompt would hang an unattended drain
  'ForwardAgent=no', // the generator host is untrusted: it must never reach our agent
  'ForwardX11=no',
  'ClearAllForwardings=yes',
];

/** Defaults placed after the user's options, so --ssh-option (or nothing else) may override them. */
export const DEFAULT_OPTIONS: readonly string[] = [
  'ControlPersist=60',
  'ServerAliveInterval=15',
  'ServerAliveCountMax=2',
  'ConnectTimeout=15',
];

const PINNED_KEYS = ['batchmode', 'controlmaster', 'controlpath'];
const FORWARDING_KEYS = [
  'forwardagent',
  'forwardx11',
  'forwardx11trusted',
  'clearallforwardings',
  'localforward',
  'remoteforward',
  'dynamicforward',
  'tunnel',
  'tunneldevice',
  'gatewayports',
];
/** Options that run a local command or load local code: only your own ssh config may set them. */
const LOCAL_CODE_KEYS = [
  'proxycommand',
  'localcommand',
  'permitlocalcommand',
  'knownhostscommand',
  'pkcs11provider',
  'securitykeyprovider',
  'include',
];
/** Options that send the worker's environment to the host: ssh starts with a minimal one (ssh-env.ts) anyway. */
const ENV_KEYS = ['sendenv', 'setenv'];
/** Options that would change what the session is: genjob runs exactly one command without a tty. */
const SESSION_KEYS = ['remotecommand', 'requesttty', 'sessiontype', 'stdinnull', 'forkafterauthentication'];

const KEY = /^[A-Za-z][A-Za-z0-9]*$/;
// ssh reads `Key=Value`, `Key Value` and `Key = Value` alike: the key ends at the first '=' or blank.
const KEY_VALUE = /^[ \t]*([^ \t=]*)[ \t]*(?:=[ \t]*|[ \t]+|$)(.*)$/s;

/** Checks one --ssh-option value; throws UsageError EGJ_BAD_SSH_OPTION naming the rule it breaks. */
export function validateSshOption(option: string): void {
  const bad = (rule: string): never => {
    throw new UsageError('EGJ_BAD_SSH_OPTION', `--ssh-option ${JSON.stringify(option)}: ${rule}`);
  };
  if (/[\0\r\n]/.test(option)) bad('must not contain NUL, CR or newline');
  const [, key = '', value = ''] = KEY_VALUE.exec(option) ?? [];
  if (key === '') bad('must be KEY=VALUE (e.g. ConnectTimeout=30)');
  if (!KEY.test(key)) bad(`"${key}" is not an ssh option name (letters and digits only)`);
  const lower = key.toLowerCase();
  if (ENV_KEYS.includes(lower))
    bad(`${key} is refused: the worker's environment (API keys, cloud credentials) never goes to a host`);
  if (value.trim() === '')
    bad(
      value === '' && !option.includes('=')
        ? 'must be KEY=VALUE (e.g. ConnectTimeout=30)'
        : 'has an empty value',
    );
  if (PINNED_KEYS.includes(lower)) bad(`${key} is fixed by genjob (batch mode, private control socket)`);
  if (FORWARDING_KEYS.includes(lower))
    bad(`${key} is refused: genjob never forwards anything to a generator host`);
  if (LOCAL_CODE_KEYS.includes(lower)) {
    bad(
      `${key} runs local commands or loads local code; set it in your own ~/.ssh/config (ProxyJump is allowed)`,
    );
  }
  if (SESSION_KEYS.includes(lower)) bad(`${key} is refused: genjob runs one command without a tty`);
}

/** Single-quotes one word of a remote command line (core/shell-quote.ts); a NUL cannot travel in one. */
export function shellQuote(word: string): string {
  if (word.includes('\0')) {
    throw new UsageError('EGJ_BAD_SSH_ARGUMENT', `remote argument ${JSON.stringify(word)}: contains NUL`);
  }
  return quoteWord(word);
}

/**
 * The remote command line: `remoteCmd` as the user configured it (a shell command, e.g. "genjob serve"
 * or "PATH=/opt/node/bin:$PATH genjob serve"), then each argument single-quoted.
 */
export function remoteCommandLine(remoteCmd: string, args: readonly string[]): string {
  return [remoteCmd, ...args.map(shellQuote)].join(' ');
}

/** Everything before `--`: pinned options, target flags, user options, overridable defaults. */
export function sshOptionArgs(target: SshTarget): string[] {
  validateTarget(target);
  validateControlDir(target.controlDir);
  const argv = ['-T'];
  for (const o of PINNED_OPTIONS) argv.push('-o', o);
  argv.push('-o', 'ControlMaster=auto', '-o', `ControlPath=${target.controlDir}/%C`);
  argv.push(...targetFlags(target));
  for (const o of target.options) {
    validateSshOption(o);
    argv.push('-o', o);
  }
  for (const o of DEFAULT_OPTIONS) argv.push('-o', o);
  return argv;
}

/**
 * `ssh <argv>` runs `remoteCommand` on the target. ssh sends the command to the remote user's shell
 * as one string, so the caller quotes arguments (remoteCommandLine). `--` stops option parsing
 * before the host, so neither the host nor the command can be read as an ssh flag.
 */
export function sshArgv(target: SshTarget, remoteCommand: string): string[] {
  return [...sshOptionArgs(target), '--', target.host, remoteCommand];
}

/** `ssh -O check|exit`: ask the control master (found by the same options, hence the same %C). */
export function sshControlArgv(target: SshTarget, command: 'check' | 'exit'): string[] {
  return ['-O', command, ...sshOptionArgs(target), '--', target.host];
}

/** `ssh -G`: print the configuration ssh would use (resolved host name, port, host key alias). */
export function sshResolveArgv(target: SshTarget): string[] {
  return ['-G', ...sshOptionArgs(target), '--', target.host];
}

/**
 * A fresh connection outside the control master (a mux client never sees key exchange), verbose and
 * without a session (-N), so its debug lines show the host key ssh verified. The caller kills it.
 */
export function sshHostKeyProbeArgv(target: SshTarget): string[] {
  const first = [
    '-v',
    '-N',
    '-o',
    'FingerprintHash=sha256',
    '-o',
    'ControlMaster=no',
    '-o',
    'ControlPath=none',
  ];
  return [...first, ...sshOptionArgs(target), '--', target.host];
}

/**
 * ssh expands %-tokens in ControlPath and splits option values on whitespace, and a unix socket path
 * holds at most 107 bytes: ssh binds `<dir>/<40 hex of %C>.<16 random>` first, so dir ≤ 49 bytes.
 */
export const MAX_CONTROL_DIR_BYTES = 49;

export function validateControlDir(dir: string): void {
  if (!dir.startsWith('/') || /[\s%'"\\\0]/.test(dir)) {
    throw new UsageError(
      'EGJ_SSH_CONTROL_DIR',
      `ssh control dir ${JSON.stringify(dir)}: must be an absolute path without whitespace, quotes, backslash or %`,
    );
  }
  if (Buffer.byteLength(dir) > MAX_CONTROL_DIR_BYTES) {
    throw new UsageError(
      'EGJ_SSH_CONTROL_DIR',
      `ssh control dir ${dir}: longer than ${MAX_CONTROL_DIR_BYTES} bytes, so the control socket path would not fit ` +
        'in a unix socket address (108 bytes); use a shorter directory',
    );
  }
}

/** -F, -i, -p, -l: explicit facts about the target (they win over ~/.ssh/config). */
export function targetFlags(target: Omit<SshTarget, 'controlDir' | 'options'>): string[] {
  const argv: string[] = [];
  if (target.configFile !== undefined) argv.push('-F', target.configFile);
  if (target.identity !== undefined) argv.push('-i', target.identity);
  if (target.port !== undefined) argv.push('-p', String(target.port));
  if (target.user !== undefined) argv.push('-l', target.user);
  return argv;
}

/** Refuses a host, user or port that ssh could misread (a leading '-', whitespace, out of range). */
export function validateTarget(target: Omit<SshTarget, 'controlDir' | 'options'>): void {
  const bad = (what: string, rule: string): never => {
    throw new UsageError('EGJ_BAD_SSH_TARGET', `ssh target ${what}: ${rule}`);
  };
  const word = /^[^\s\-\0'"`$\\;&|<>()][^\s\0'"`$\\;&|<>()]*$/;
  if (!word.test(target.host))
    bad(JSON.stringify(target.host), 'host must be a name or address, not starting with "-"');
  // box:2222 is a first guess ssh reads as a host name ("Could not resolve hostname box:2222"); an IPv6
  // address has two colons or more
  const hostPort = /^[^:]+:(\d+)$/.exec(target.host);
  if (hostPort)
    bad(
      JSON.stringify(target.host),
      `ssh takes no host:port: give the port apart (--port ${hostPort[1]}, or Port in a Host entry of the ssh config)`,
    );
  if (target.user !== undefined && !word.test(target.user)) {
    bad(JSON.stringify(target.user), 'user must be a plain login name, not starting with "-"');
  }
  if (
    target.port !== undefined &&
    !(Number.isInteger(target.port) && target.port >= 1 && target.port <= 65535)
  ) {
    bad(String(target.port), 'port must be an integer from 1 to 65535');
  }
  for (const [what, file] of [
    ['identity', target.identity],
    ['config file', target.configFile],
  ] as const) {
    if (file !== undefined && (file === '' || /[\0\r\n]/.test(file))) {
      bad(`${what} ${JSON.stringify(file)}`, 'must be a non-empty path without NUL or newline');
    }
  }
}
