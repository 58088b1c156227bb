// Types for bench/sshd.mjs, the one sshd harness (the benchmark imports it directly; the tests through
// test/helpers/sshd.ts).

export interface SshdOptions {
  /** The client config's Host alias; also names the keys (`<alias>-host`, `<alias>-client`). */
  alias: string;
  /**
   * Shell text sourced (by /bin/sh) before every remote command, through a ForceCommand wrapper,
   * to simulate a noisy or slow remote rc file without touching the real ~/.bashrc. With it, the
   * original command runs under /bin/sh -c instead of the login shell.
   */
  loginShellRc?: string;
  /** MaxSessions and MaxStartups of the server (sshd's defaults when absent). */
  maxSessions?: number;
  /** `AcceptEnv` patterns of the server, e.g. '*' for a host that takes every variable a client sends. */
  acceptEnv?: string;
  /** `BatchMode yes` in the client config: ssh fails instead of prompting. */
  batchMode?: boolean;
}

export interface SshdHandle {
  host: '127.0.0.1';
  port: number;
  user: string;
  /** Client config Host alias → 127.0.0.1, Port, User, IdentityFile, known_hosts, strict checking. */
  alias: string;
  identityFile: string;
  knownHostsFile: string;
  /** The client config describing `alias`. */
  sshConfigFile: string;
  /** The server's ed25519 host public key file (for `ssh-keygen -lf`). */
  hostKeyPubFile: string;
  /** The remote user's home directory (the real one: sshd uses the passwd entry). */
  homeDir: string;
  tmp: string;
  stop(): Promise<void>;
}

/** Start sshd; with no options, the benchmark's (alias genjob-bench, 64 sessions, BatchMode). */
export function startSshd(opts?: SshdOptions): Promise<SshdHandle>;
