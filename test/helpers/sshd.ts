// The sshd harness for the transport tests: bench/sshd.mjs (the one implementation, shared with the
// benchmark) started with the alias 'genjob-test' and sshd's own session limits, plus `useSshd`, which
// gives a describe block one server for all its tests.
import { afterAll, beforeAll } from 'vitest';
import { type SshdHandle as BenchSshdHandle, startSshd as startBenchSshd } from '../../bench/sshd.mjs';

export interface SshdHandle extends BenchSshdHandle {
  /** The client config's Host alias → 127.0.0.1, Port, User, IdentityFile, known_hosts, strict checking. */
  hostAlias: string;
}

export interface SshdOptions {
  /**
   * Shell text sourced (by /bin/sh) before every remote command, through a ForceCommand wrapper,
   * to simulate a noisy or slow remote rc file without touching the real ~/.bashrc. With it, the
   * original command runs under /bin/sh -c instead of the login shell.
   */
  loginShellRc?: string;
  /** sshd's `AcceptEnv` patterns ('*': a host that takes every variable a client sends). */
  acceptEnv?: string;
}

export async function startSshd(opts: SshdOptions = {}): Promise<SshdHandle> {
  const handle = await startBenchSshd({
    alias: 'genjob-test',
    loginShellRc: opts.loginShellRc,
    acceptEnv: opts.acceptEnv,
  });
  return { ...handle, hostAlias: handle.alias };
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
