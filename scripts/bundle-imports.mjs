// What a bundle still imports at run time besides Node's own modules, from esbuild's metafile.
// genjob ships dist/ alone (its packages are devDependencies), so this list must be empty: a
// package left external would make `npm install -g genjob-<v>.tgz` fetch it, or fail offline.
import { builtinModules } from 'node:module';

const builtin = new Set(builtinModules);

/** One `<output file> imports <specifier>` line per external import that is not a Node builtin. */
export function unbundledImports(metafile) {
  return Object.entries(metafile.outputs).flatMap(([file, out]) =>
    out.imports
      .filter((i) => i.external && !i.path.startsWith('node:') && !builtin.has(i.path))
      .map((i) => `${file} imports ${i.path}`),
  );
}
