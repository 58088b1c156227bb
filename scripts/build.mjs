// Bundle the CLI with esbuild into one minified CommonJS file, dist/genjob.cjs, and write the V8 code cache of
// its compiled text beside it (dist/genjob.cjs.cache), which bin/bundle-loader.js hands to V8 at every
// start: Node 20 caches no compiled code of its own, and parsing the code was most of a small
// command's start-up. Each command's modules are still evaluated only when it runs (esbuild wraps each
// module in an init function called on first use), so `genjob --version` runs none of zod, execa or tar.
// The bundle is built beside dist/ and swapped in by rename, so a CLI started meanwhile never
// finds dist/ half-written or missing. Every package the CLI uses is bundled (they are all
// devDependencies): the build fails if the bundle still imports anything but Node's own modules,
// so the packed tarball installs with nothing to fetch.
import { execFileSync } from 'node:child_process';
import { cp, readFile, rename, rm } from 'node:fs/promises';
import { build } from 'esbuild';
import { WRAPPER, WRAPPER_END } from '../bin/bundle-loader.js';
import { unbundledImports } from './bundle-imports.mjs';

const next = `dist.next-${process.pid}`;
const old = `dist.old-${process.pid}`;
await rm(next, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: ['src/cli/main.ts'],
  outfile: `${next}/genjob.cjs`,
  bundle: true,
  format: 'cjs',
  charset: 'ascii',
  // import() of a bundled module or a Node builtin becomes a call (a vm script has no module loader)
  supported: { 'dynamic-import': false },
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  // Every start reads, hashes, decodes and deserializes the bundle: minified it is half the bytes and
  // ~10 ms less of each command's start-up. keepNames keeps functions' and classes' names, which
  // stack traces and the packages' own error names show.
  minify: true,
  keepNames: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  // secretlint logs through debug, which prints to stderr whenever a user's DEBUG names it and
  // requires supports-color by name: bundle a silent logger instead, so the built CLI looks up no
  // package at run time and mint's stderr stays its own.
  plugins: [
    {
      // commander requires node:child_process as it loads, for subcommands that are executables of
      // their own, which genjob has none of: it is required on first use instead (~3 ms of CPU at
      // every start of a command that runs no process, like show)
      name: 'commander-lazy-child-process',
      setup(b) {
        b.onLoad({ filter: /[\\/]commander[\\/]lib[\\/]command\.js$/ }, async (args) => {
          const eager = "const childProcess = require('node:child_process');\n";
          const text = await readFile(args.path, 'utf8');
          const uses = text.match(/childProcess\.?\w*/g) ?? [];
          if (!text.includes(eager) || uses.some((u) => u !== 'childProcess' && u !== 'childProcess.spawn'))
            throw new Error(`build: ${args.path} no longer uses node:child_process as the build expects`);
          const lazy =
            "const childProcess = { spawn: (...a) => require('node:child_process').spawn(...a) };\n";
          return { contents: text.replace(eager, lazy), loader: 'js' };
        });
      },
    },
    {
      name: 'silent-debug',
      setup(b) {
        b.onResolve({ filter: /^debug$/ }, () => ({ path: 'debug', namespace: 'silent' }));
        b.onLoad({ filter: /.*/, namespace: 'silent' }, () => ({
          contents:
            'const d = () => { const log = () => {}; log.enabled = false; log.extend = d; return log; };\nmodule.exports = d; module.exports.default = d;',
        }));
      },
    },
  ],
  // The file is a CommonJS module's wrapper around the code (bin/bundle-loader.js compiles it as it is,
  // without building a wrapped copy of 1 MB at every start); the sources are ES modules: strict mode (the
  // directive must come first in the function, so esbuild's own is not left to follow the banner), and
  // import.meta.url as the bundle's own URL.
  banner: {
    js: `${WRAPPER}"use strict";\nconst __genjobBundleUrl = require('node:url').pathToFileURL(__filename).href;`,
  },
  footer: { js: WRAPPER_END },
  define: { 'import.meta.url': '__genjobBundleUrl' },
});
// compiled exactly as bin/bundle-loader.js compiles it at every start, in a process of its own that runs
// a few commands first (their output is not this build's)
const bundle = `${next}/genjob.cjs`;
execFileSync(process.execPath, ['scripts/warm-cache.mjs', bundle, 'dist/genjob.cjs'], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
// the report's stylesheet and script are files the report inlines at run time: they ship in dist/
await cp('src/report/assets', `${next}/report-assets`, { recursive: true });
const unbundled = unbundledImports(metafile);
if (unbundled.length > 0) {
  await rm(next, { recursive: true, force: true });
  throw new Error(
    `build: the bundle must import no package at run time (the tarball installs without them):\n  ${unbundled.join('\n  ')}`,
  );
}
await rename('dist', old).catch(() => {});
await rename(next, 'dist');
await rm(old, { recursive: true, force: true });
