// Bundle the CLI with esbuild: one ESM entry plus lazily loaded chunks per command,
// so `genjob --version` imports none of zod, execa or tar (start-up is most of a small command's cost).
// The bundle is built beside dist/ and swapped in by rename, so a CLI started meanwhile never
// finds dist/ half-written or missing. Every package the CLI uses is bundled (they are all
// devDependencies): the build fails if the bundle still imports anything but Node's own modules,
// so the packed tarball installs with nothing to fetch.
import { cp, rename, rm } from 'node:fs/promises';
import { build } from 'esbuild';
import { unbundledImports } from './bundle-imports.mjs';

const next = `dist.next-${process.pid}`;
const old = `dist.old-${process.pid}`;
await rm(next, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: ['src/cli/main.ts'],
  outdir: next,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  // secretlint logs through debug, which prints to stderr whenever a user's DEBUG names it and
  // requires supports-color by name: bundle a silent logger instead, so the built CLI looks up no
  // package at run time and mint's stderr stays its own.
  plugins: [
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
  // proper-lockfile and graceful-fs are CommonJS and call require(); give the ESM bundle one.
  banner: {
    js: "import { createRequire as __gjCreateRequire } from 'node:module'; const require = __gjCreateRequire(import.meta.url);",
  },
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
