// The environment a --launch command starts with: the same short allowlist as ssh (ssh-env.ts) plus
// the names the user passed with --launch-env, never the worker's whole environment. A launcher
// forwards what it is given (srun's default is --export=ALL, `kubectl exec` and `podman run` read
// their own config from it), so whatever is here may reach the node that runs serve.
import { UsageError } from '../core/errors.js';
import { sshEnv } from './ssh-env.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A --launch-env name, checked; a usage error for anything that is not an environment name. */
export function checkLaunchEnvName(name: string): string {
  if (!ENV_NAME.test(name))
    throw new UsageError('EGJ_USAGE', `--launch-env ${JSON.stringify(name)}: not an environment name`);
  return name;
}

/** The allowlisted names of `env` that are set, plus each of `names` that is set; nothing more. */
export function launchEnv(
  names: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const out = sshEnv(env);
  for (const name of names) {
    const value = env[checkLaunchEnvName(name)];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
