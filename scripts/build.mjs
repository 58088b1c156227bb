// Bundle the CLI with esbuild: one ESM entry plus lazily loaded chunks per command,
// so `genjob --version` imports none of zod, execa or tar (start-up is most of a small command's cost).

import { rm } from 'node:fs/promises';
import { build } from 'esbuild';

await rm('dist', { recursive: true, force: true });
await build({
  entryPoints: ['src/cli/main.ts'],
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  // proper-lockfile and graceful-fs are CommonJS and call require(); give the ESM bundle one.
  banner: {
    js: "import { createRequire as __gjCreateRequire } from 'node:module'; const require = __gjCreateRequire(import.meta.url);",
  },
});
