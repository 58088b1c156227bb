// Which modules a run of the built CLI evaluates, and in what order against its own output. The CLI is
// one bundle whose modules each run on first use, through esbuild's init helpers (`__esm` for ES
// modules, `__commonJS` for CommonJS packages). A preload patches those two helpers as the bundle is
// compiled, so each module's first init writes `loaded <module path> [<package>]` to stderr, the
// stream the command writes to, synchronously: the text's order is the order things happened. The
// patch changes the source, so V8 refuses the build's code cache and compiles it afresh.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-store.js';

const PRELOAD = `
const vm = require('node:vm');
const HELPERS = [
  ['var __esm = (fn, res, err) => function __init() {', 'if (fn) __genjobTrace(__getOwnPropNames(fn)[0]);'],
  ['var __commonJS = (cb, mod) => function __require() {', 'if (!mod) __genjobTrace(__getOwnPropNames(cb)[0]);'],
];
const TRACE = "function __genjobTrace(name) { const m = /node_modules\\\\/((?:@[^/]+\\\\/)?[^/]+)\\\\//.exec(name); require('node:fs').writeSync(2, 'loaded ' + name + ' [' + (m ? m[1] : '') + ']\\\\n'); }\\n";
const Script = vm.Script;
vm.Script = function TracedScript(code, options) {
  if (typeof options?.filename === 'string' && options.filename.endsWith('/dist/genjob.cjs')) {
    for (const [helper, call] of HELPERS) {
      if (!code.includes(helper)) throw new Error('module-trace: the bundle has no ' + helper);
      code = code.replace(helper, helper + ' ' + call);
    }
    code = code.replace(/\\n\\}\\)$/, '\\n' + TRACE + '})'); // after the "use strict" directive, hoisted
    options = { ...options, cachedData: undefined };
  }
  return new Script(code, options);
};
`;

/** NODE_OPTIONS that make a process report each module of the bundle it evaluates (with its package) on stderr. */
export function traceOptions(): string {
  const preload = join(tempDir('gj-module-trace-'), 'trace.cjs');
  writeFileSync(preload, PRELOAD);
  return `--require=${preload}`;
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
