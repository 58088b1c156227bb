// `work --launch CMD`: any engine that runs a command somewhere and connects its pipes is a
// transport. CMD runs through `sh -c` (e.g. `srun -N1 --quiet -u genjob serve --session`, `kubectl exec
// -i POD -- genjob serve --session`, `podman run -i --rm IMAGE genjob serve --session`) and the
// framed protocol flows over its stdin/stdout, exactly as with a local child or ssh. CMD gets its
// own process group, so a timeout kills the launcher client and everything it started here, and
// only the minimal environment of launch-env.ts, since a launcher forwards what it is given.
import { launchEnv } from './launch-env.js';
import type { ServeLauncher, ServeProcess } from './launcher.js';
import { spawnServe } from './spawn-serve.js';
import { remoteCommandLine } from './ssh-options.js';

/** `passEnv`: the names given with --launch-env, passed on top of the minimal environment. */
export function launchLauncher(command: string, passEnv: readonly string[] = []): ServeLauncher {
  return {
    destination: `launch:${command}`,
    start(args: readonly string[]): ServeProcess {
      return spawnServe('/bin/sh', ['-c', remoteCommandLine(command, args)], launchEnv(passEnv));
    },
    async shipmentFacts() {
      return { launch: command };
    },
    async close() {},
  };
}
