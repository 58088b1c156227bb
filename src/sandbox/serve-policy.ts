// The sandbox policy from serve's (or work's) flags and environment. Flags and the environment
// add up: GENJOB_GENERATOR_BIND / GENJOB_GENERATOR_BIND_RW (`:`-separated absolute paths) expose
// paths like --generator-bind / --generator-bind-rw, so a test harness or a wrapper can set them
// once. Nothing in the environment can turn the sandbox off or the network on: only flags can.
// A bind that would show what serve hides is refused here, before anything is served (exposure.ts), and
// so is one the sandbox user (a serve run as root: sandbox-user.ts) cannot reach, which bwrap would fail on.
import { UsageError } from '../core/errors.js';
import { checkExposure } from './exposure.js';
import { checkBindPath, checkEnvName, pathsFromEnv, type SandboxPolicy } from './policy.js';
import { type SandboxUser, sandboxUser, unreachable } from './sandbox-user.js';

export interface SandboxFlags {
  generatorEnv?: string[];
  generatorNetwork?: boolean;
  generatorBind?: string[];
  generatorBindRw?: string[];
  /** commander's --no-sandbox: false when given. */
  sandbox?: boolean;
  /** --sandbox-user USER|UID[:GID]: who a root serve runs generators as (default nobody; root keeps root). */
  sandboxUser?: string;
}

/** Refuse (EGJ_USAGE) an exposed path `user` cannot reach: bwrap, started as that user, could not bind it. */
function checkReach(user: SandboxUser, flagged: ReadonlyArray<readonly [string, string]>): void {
  for (const [flag, p] of flagged) {
    const blocked = unreachable(p, user);
    if (blocked !== null)
      throw new UsageError(
        'EGJ_USAGE',
        `${flag} ${p}: the sandbox user ${user.label} cannot reach it (${blocked} is not searchable by it); expose a path that user may reach, or pass --sandbox-user root`,
      );
  }
}

export function sandboxPolicy(
  o: SandboxFlags,
  env: NodeJS.ProcessEnv,
  hidden: readonly string[],
  secrets: readonly string[] = [],
): SandboxPolicy {
  const binds = [...(o.generatorBind ?? []), ...pathsFromEnv(env.GENJOB_GENERATOR_BIND)];
  const bindsRw = [...(o.generatorBindRw ?? []), ...pathsFromEnv(env.GENJOB_GENERATOR_BIND_RW)];
  const policy: SandboxPolicy = {
    kind: o.sandbox === false ? 'none' : 'bwrap',
    network: o.generatorNetwork === true,
    envNames: (o.generatorEnv ?? []).map(checkEnvName),
    binds: binds.map((p) => checkBindPath('--generator-bind', p)),
    bindsRw: bindsRw.map((p) => checkBindPath('--generator-bind-rw', p)),
    hidden: [...hidden, ...secrets],
    secrets,
  };
  const user = sandboxUser(o.sandboxUser);
  if (user) policy.user = user;
  if (policy.kind === 'bwrap') {
    checkExposure(policy);
    if (user)
      checkReach(user, [
        ...policy.binds.map((p) => ['--generator-bind', p] as const),
        ...policy.bindsRw.map((p) => ['--generator-bind-rw', p] as const),
      ]);
  }
  return policy;
}

/** The flags `work` forwards to the serve it starts (appended to --remote-cmd over ssh). */
export function serveArgsOf(o: SandboxFlags): string[] {
  const args: string[] = [];
  for (const n of o.generatorEnv ?? []) args.push('--generator-env', checkEnvName(n));
  for (const p of o.generatorBind ?? []) args.push('--generator-bind', checkBindPath('--generator-bind', p));
  for (const p of o.generatorBindRw ?? [])
    args.push('--generator-bind-rw', checkBindPath('--generator-bind-rw', p));
  if (o.generatorNetwork) args.push('--generator-network');
  if (o.sandbox === false) args.push('--no-sandbox');
  if (o.sandboxUser !== undefined) args.push('--sandbox-user', o.sandboxUser);
  return args;
}
