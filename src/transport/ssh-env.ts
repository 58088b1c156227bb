// The environment ssh is started with: a short allowlist, never the worker's whole environment, so no
// SendEnv (ours are refused, but ~/.ssh/config or /etc/ssh/ssh_config may have one) can hand a host
// the worker's API keys or cloud credentials. Kept: what ssh itself reads to find its config, keys,
// agent and Kerberos ticket, and the locale names Debian's ssh_config sends by default.

/** Names ssh may need from the worker's environment; everything else is dropped. */
export const SSH_ENV_NAMES: readonly string[] = [
  'HOME', // ~/.ssh/config, keys, known_hosts
  'PATH', // ProxyJump runs ssh again; a ProxyCommand in ~/.ssh/config runs a program
  'USER',
  'LOGNAME',
  // The agent holds passphrase-protected keys (BatchMode never prompts). Agent forwarding is pinned
  // off, so the host never reaches it; the socket path alone is not a secret.
  'SSH_AUTH_SOCK',
  'KRB5CCNAME', // GSSAPI authentication
  'TMPDIR',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'LC_MESSAGES',
  'LC_COLLATE',
  'LC_NUMERIC',
  'LC_TIME',
];

/** The environment for an ssh child: the allowlisted names of `env` that are set, nothing more. */
export function sshEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of SSH_ENV_NAMES) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
