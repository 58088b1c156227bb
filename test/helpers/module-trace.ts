// Which packages a run of the built CLI loads, and in what order against its own output: a module
// hook writes the packages bundled into each chunk of dist/ as Node loads it, to the same stream the
// command writes to, synchronously, so the text's order is the order things happened.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-store.js';

const HOOK = `
import { writeSync } from 'node:fs';
export async function load(url, ctx, next) {
  const r = await next(url, ctx);
  if (url.includes('/dist/')) {
    const text = typeof r.source === 'string' ? r.source : new TextDecoder().decode(r.source);
    const pkgs = new Set([...text.matchAll(/^\\/\\/ .*?node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//gm)].map((m) => m[1]));
    writeSync(2, 'loaded ' + url.split('/').pop() + ' [' + [...pkgs].join(' ') + ']\\n');
  }
  return r;
}`;

/** NODE_OPTIONS that make a process report each dist/ chunk it loads (with its packages) on stderr. */
export function traceOptions(): string {
  const dir = tempDir('gj-module-trace-');
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(hooks, HOOK);
  const register = join(dir, 'register.mjs');
  writeFileSync(
    register,
    `import { register } from 'node:module';\nimport { pathToFileURL } from 'node:url';\nregister(pathToFileURL(${JSON.stringify(hooks)}));\n`,
  );
  return `--import=${register}`;
}

/** The packages named in `text`'s "loaded" lines. */
export function packagesIn(text: string): Set<string> {
  return new Set(text.match(/(?<=\[| )[@a-z][^ \]]*/g));
}

/** Run `sh -c script` with the trace on; stdout and stderr together, in order. */
export function traced(script: string, args: readonly string[], cwd?: string): string {
  return execFileSync('sh', ['-c', `${script} 2>&1`, ...args], {
    cwd,
    env: { ...process.env, NODE_OPTIONS: traceOptions() },
  }).toString('utf8');
}
