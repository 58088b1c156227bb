// The local transport: `genjob serve` as a child process of the worker, over stdin/stdout.
// Same protocol and same serve code as over ssh; only the pipe differs. The child gets its own
// process group so a timeout can kill it and everything its generator started.
import { cliEntry } from '../cli/package-root.js';
import type { ServeLauncher, ServeProcess } from './launcher.js';
import { spawnServe } from './spawn-serve.js';

export function localLauncher(opts: { env?: NodeJS.ProcessEnv; repo?: string } = {}): ServeLauncher {
  // serve runs beside the worker's repository: it masks it wherever a system directory shows it
  const repo = opts.repo === undefined ? [] : ['--worker-repo', opts.repo];
  return {
    destination: 'local',
    start(args: readonly string[]): ServeProcess {
      return spawnServe(process.execPath, [cliEntry(), 'serve', ...args, ...repo], opts.env ?? process.env);
    },
    async shipmentFacts() {
      return { host: 'local' };
    },
    async close() {},
  };
}
