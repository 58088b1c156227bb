// Which modules a run of the built CLI evaluates, and in what order against its own output: the preload
// (module-trace-preload.cjs) makes each module of the bundle write `loaded <module path> [<package>]`
// to stderr, the stream the command writes to, synchronously, on its first init.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PRELOAD = fileURLToPath(new URL('./module-trace-preload.cjs', import.meta.url));

/** NODE_OPTIONS that make a process report each module of the bundle it evaluates (with its package) on stderr. */
export function traceOptions(): string {
  return `--require=${PRELOAD}`;
}

/** The packages named in `text`'s "loaded" lines. */
export function packagesIn(text: string): Set<string> {
  return new Set([...text.matchAll(/^loaded \S+ \[([^\]]*)\]$/gm)].map((m) => m[1]!).filter((p) => p !== ''));
}

/** Run `sh -c script` with the trace on; stdout and stderr together, in order. */
export function traced(script: string, args: readonly string[], cwd?: string): string {
  return execFileSync('sh', ['-c', `${script} 2>&1`, ...args], {
    cwd,
    env: { ...process.env, NODE_OPTIONS: traceOptions() },
  }).toString('utf8');
}
