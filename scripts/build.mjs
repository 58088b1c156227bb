// Bundle the CLI with esbuild: one ESM entry plus lazily loaded chunks per command,
// so `genjob --version` imports none of zod, execa or tar (start-up is most of a small command's cost).
// The bundle is built beside dist/ and swapped in by rename, so a CLI started meanwhile never
// finds dist/ half-written or missing.
import { rename, rm } from 'node:fs/promises';
import { build } from 'esbuild';

const next = `dist.next-${process.pid}`;
const old = `dist.old-${process.pid}`;
await rm(next, { recursive: true, force: true });
await build({
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
  // debug (secretlint's logger) requires supports-color inside a try, and it is not installed:
  // bundle an empty module for it, so the built CLI looks up no package by name at run time.
  plugins: [
    {
      name: 'empty-supports-color',
      setup(b) {
        b.onResolve({ filter: /^supports-color$/ }, () => ({ path: 'supports-color', namespace: 'empty' }));
        b.onLoad({ filter: /.*/, namespace: 'empty' }, () => ({ contents: 'module.exports = {};' }));
      },
    },
  ],
  // proper-lockfile and graceful-fs are CommonJS and call require(); give the ESM bundle one.
  banner: {
    js: "import { createRequire as __gjCreateRequire } from 'node:module'; const require = __gjCreateRequire(import.meta.url);",
  },
});
await rename('dist', old).catch(() => {});
await rename(next, 'dist');
await rm(old, { recursive: true, force: true });
