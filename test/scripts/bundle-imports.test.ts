// scripts/bundle-imports.mjs, the build's last check: a bundle may import Node's own modules at run time
// and nothing else, because the packed tarball ships dist/ without node_modules.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { unbundledImports } from '../../scripts/bundle-imports.mjs';
import { tempDir } from '../helpers/temp-store.js';

/** esbuild's metafile for an entry holding `source`, bundled as scripts/build.mjs does (plus `external`). */
async function metafileOf(source: string, external: string[] = []) {
  const dir = tempDir('genjob-bundle-');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/entry.ts'), source);
  const r = await build({
    entryPoints: [join(dir, 'src/entry.ts')],
    outdir: join(dir, 'out'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    write: false,
    metafile: true,
    logLevel: 'silent',
    // the entry lives in a temp dir: resolve packages from genjob's own node_modules
    nodePaths: [join(new URL('../..', import.meta.url).pathname, 'node_modules')],
    external,
  });
  return r.metafile;
}

describe('unbundledImports', () => {
  it("passes a bundle that imports only Node's modules, with or without the node: prefix", async () => {
    const meta = await metafileOf(
      "import { readFileSync } from 'node:fs'; import { join } from 'path'; import { z } from 'zod';\n" +
        'console.log(readFileSync, join, z);\n',
    );
    expect(unbundledImports(meta)).toEqual([]);
  });

  it('names each output file and the package it would fetch when a package is left external', async () => {
    const meta = await metafileOf("import { z } from 'zod'; import 'tar';\nconsole.log(z);\n", [
      'zod',
      'tar',
    ]);
    expect(unbundledImports(meta).map((l) => l.replace(/^.*\//, ''))).toEqual([
      'entry.js imports zod',
      'entry.js imports tar',
    ]);
  });
});
