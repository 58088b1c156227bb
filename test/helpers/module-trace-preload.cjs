// Preloaded (node --require) by module-trace.ts: patches the built CLI's bundle as it is compiled so that
// each of its modules, on its first init, writes `loaded <module path> [<package>]` to stderr,
// synchronously. The bundle is minified, so esbuild's two init helpers (ES module: fn, res, err;
// CommonJS package: cb, mod) are found by their shape, whatever their letters. Each gains a parameter
// whose default tags fn (or cb) with where in the bundle the module is defined, and a trace call on
// the first init; the module's path is read from the build's source map at that position. The patch
// changes the source, so V8 refuses the build's code cache and compiles it afresh.
'use strict';
const { readFileSync, writeSync } = require('node:fs');
const { SourceMap } = require('node:module');
const vm = require('node:vm');

const HELPERS = [
  {
    re: /var [\w$]+=\(([\w$]+),([\w$]+),([\w$]+)\)=>\(\)=>\{if\(\3\)throw \3\[0\];try\{return \1&&\(\2=\1\(\1=0\)\),\2\}/g,
    first: (m) => `if(${m[1]})__genjobTrace(${m[1]});`, // fn is zeroed by the first init
  },
  {
    re: /var [\w$]+=\(([\w$]+),([\w$]+)\)=>\(\)=>\{try\{return \2\|\|\1\(\(\2=\{exports:\{\}\}\)\.exports,\2\),\2\.exports\}/g,
    first: (m) => `if(!${m[2]})__genjobTrace(${m[1]});`, // mod is set by the first init
  },
];
/** The build writes the bundle's first line as the loader's CommonJS wrapper (scripts/build.mjs). */
const { WRAPPER: BUNDLE_START } = require('../../bin/bundle-loader.js');

/**
 * The bundle's text with both helpers patched, what each patch inserted where (line, column, length),
 * and how many lines stand before the bundle's own first one.
 */
function patch(code) {
  const inserts = [];
  for (const { re, first } of HELPERS) {
    const found = [...code.matchAll(re)];
    if (found.length !== 1) throw new Error(`module-trace: ${found.length} matches in the bundle of ${re}`);
    const m = found[0];
    const arrow = m.index + m[0].indexOf(')=>()=>{');
    inserts.push({ at: arrow, text: `,__genjobAt=__genjobTag(${m[1]})` });
    inserts.push({ at: arrow + ')=>()=>{'.length, text: first(m) });
  }
  const shifts = inserts.map(({ at, text }) => {
    const lineStart = code.lastIndexOf('\n', at - 1) + 1;
    return { line: code.slice(0, at).split('\n').length - 1, column: at - lineStart, length: text.length };
  });
  for (const { at, text } of inserts.sort((a, b) => b.at - a.at))
    code = code.slice(0, at) + text + code.slice(at);
  // lines put before the bundle's own first line (Stryker's sandbox adds a `// @ts-nocheck` line)
  const start = code.indexOf(BUNDLE_START);
  if (start === -1) throw new Error('module-trace: the bundle does not start with its CommonJS wrapper');
  return { code, shifts, lead: code.slice(0, start).split('\n').length - 1 };
}

let shifts = [];
let lead = 0;
let mapFile;
let map;
const sites = new WeakMap();

/** Tag fn with the position (in the bundle as built) of the call that defines its module. */
globalThis.__genjobTag = function __genjobTag(fn) {
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = (_, frames) => frames;
  const holder = {};
  Error.captureStackTrace(holder, __genjobTag);
  const site = holder.stack[1]; // [0] is the helper, [1] the module's definition
  Error.prepareStackTrace = saved;
  const line = site.getLineNumber() - 1;
  let column = site.getColumnNumber() - 1;
  const before = shifts.filter((s) => s.line === line && s.column < column);
  for (const s of before) column -= s.length;
  sites.set(fn, [line - lead, column]); // as the build wrote the bundle, which its source map describes
};

globalThis.__genjobTrace = function __genjobTrace(fn) {
  map ??= new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')));
  const [line, column] = sites.get(fn) ?? [-1, -1];
  const name = (map.findEntry(line, column).originalSource ?? '?').replace(/^(\.\.\/)+/, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(name);
  writeSync(2, `loaded ${name} [${pkg ? pkg[1] : ''}]\n`);
};

const Script = vm.Script;
vm.Script = function TracedScript(code, options) {
  if (typeof options?.filename === 'string' && options.filename.endsWith('/dist/genjob.cjs')) {
    const patched = patch(code);
    code = patched.code;
    shifts = patched.shifts;
    lead = patched.lead;
    mapFile = `${options.filename}.map`;
    options = { ...options, cachedData: undefined };
  }
  return new Script(code, options);
};
