// Types for scripts/bundle-imports.mjs (plain ESM, run by the build without compiling).
import type { Metafile } from 'esbuild';

export function unbundledImports(metafile: Metafile): string[];
