// A child process script over src/ modules, for tests that need real concurrent processes: the
// TypeScript source is bundled by esbuild into one CommonJS file that plain `node` runs.
import { join } from 'node:path';
import { build } from 'esbuild';

/** Bundle `source` (imports resolved from `resolveDir`) into `outDir`/child.cjs; returns its path. */
export async function bundleChild(source: string, resolveDir: string, outDir: string): Promise<string> {
  const outfile = join(outDir, 'child.cjs');
  await build({
    stdin: { contents: source, resolveDir, loader: 'ts' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    outfile,
    logLevel: 'silent',
  });
  return outfile;
}
