// `work --launch CMD`: any engine that runs a command somewhere and connects its pipes is a
// transport. CMD runs through `sh -c` (e.g. `srun -N1 --quiet -u genjob serve --session`, `kubectl exec
// -i POD -- genjob serve --session`, `podman run -i --rm IMAGE genjob serve --session`) and the
// framed protocol flows over its stdin/stdout, exactly as with a local child or ssh. CMD gets its
// own process group, so a timeout kills the launcher client and everything it started here.
import type { ServeLauncher, ServeProcess } from './launcher.js';
import { spawnServe } from './spawn-serve.js';
import { remoteCommandLine } from './ssh-options.js';

export function launchLauncher(command: string, opts: { env?: NodeJS.ProcessEnv } = {}): ServeLauncher {
  return {
    destination: `launch:${command}`,
    start(args: readonly string[]): ServeProcess {
      return spawnServe('/bin/sh', ['-c', remoteCommandLine(command, args)], opts.env ?? process.env);
    },
    async shipmentFacts() {
      return { launch: command };
    },
    async close() {},
  };
}
