// How a host confines its generators: bubblewrap or nothing (`--no-sandbox`), network on or off,
// which extra environment names and paths the generator may see, and what must stay hidden
// (the result cache, the workspaces root, the signing key) even inside an exposed path.
// One policy per serve process; serve's own flags and environment decide it on that host.
import { isAbsolute, resolve } from 'node:path';
import { UsageError } from '../core/errors.js';
import type { SandboxUser } from './sandbox-user.js';

export interface SandboxPolicy {
  /** bwrap: confined; none: `--no-sandbox` (environment allowlist and process sweep only). */
  kind: 'bwrap' | 'none';
  network: boolean;
  /** Extra environment names passed through (`--generator-env NAME`). */
  envNames: readonly string[];
  /** Paths exposed read-only (`--generator-bind PATH`, GENJOB_GENERATOR_BIND). */
  binds: readonly string[];
  /** Paths exposed writable (`--generator-bind-rw PATH`, GENJOB_GENERATOR_BIND_RW). */
  bindsRw: readonly string[];
  /** Never visible inside, even under an exposed path. */
  hidden: readonly string[];
  /** Hidden files no exposed path may even hold (the signing key: its directory holds older keys). */
  secrets?: readonly string[];
  /**
   * Not shown through the system directories: the repository of the worker (or checker) beside which
   * the sandbox runs, which a system directory holds when it lives under /opt or /usr/src. Masked there
   * only, so what is exposed inside it on purpose (a --generator-bind, the generator's own file, a
   * checker's tree) still shows.
   */
  masked?: readonly string[];
  /**
   * The unprivileged user bubblewrap (or, unconfined, the command) is started as: a genjob run as root
   * (sandbox-user.ts). Absent: it runs as genjob's own user (not root, or root by --sandbox-user root).
   */
  user?: SandboxUser;
}

/** The sandbox is the host's root: genjob runs as root and drops to no sandbox user. */
export function sandboxIsRoot(policy: Pick<SandboxPolicy, 'user'>): boolean {
  return policy.user === undefined && process.geteuid?.() === 0;
}

/** What a receipt records about the confinement of the run that produced it. */
export interface SandboxRecord {
  kind: 'bwrap' | 'none' | 'builtin';
  network: boolean;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Names no `--generator-env` may pass: the host's own secrets and genjob's controls. */
const NEVER_PASSED =
  /^(GENJOB_SIGN_KEY|GENJOB_OPENAI_.*|SSH_AUTH_SOCK|GENJOB_CACHE_DIR|LD_PRELOAD|LD_LIBRARY_PATH)$/;

export function checkEnvName(name: string): string {
  if (!ENV_NAME.test(name))
    throw new UsageError('EGJ_USAGE', `--generator-env ${JSON.stringify(name)}: not an environment name`);
  if (NEVER_PASSED.test(name))
    throw new UsageError(
      'EGJ_USAGE',
      `--generator-env ${name}: a host secret or control; never passed to a generator`,
    );
  return name;
}

/** A `:`-separated path list from the environment (GENJOB_GENERATOR_BIND, GENJOB_GENERATOR_BIND_RW). */
export function pathsFromEnv(value: string | undefined): string[] {
  return (value ?? '').split(':').filter((p) => p !== '');
}

export function checkBindPath(flag: string, p: string): string {
  if (!isAbsolute(p) && !p.startsWith('.'))
    throw new UsageError('EGJ_USAGE', `${flag} ${JSON.stringify(p)}: give an absolute path`);
  return resolve(p);
}

export function recordOf(p: Pick<SandboxPolicy, 'kind' | 'network'>): SandboxRecord {
  return { kind: p.kind, network: p.kind === 'none' ? true : p.network };
}
