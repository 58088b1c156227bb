// Start the built CLI: dist/genjob.cjs, the whole CLI in one minified file (a CommonJS module's wrapper
// around its code), compiled with the V8 code cache the build wrote beside it (dist/genjob.cjs.cache).
// Node 20 keeps no compile cache of its own, and reading, parsing and linking the code was most of a
// small command's start-up (an ES module graph cost ~0.35 ms a module on top). Each command's code
// still runs only when that command does: the bundle evaluates a module on its first use.
// V8 checks only a cache's header (its version, flags, the source's length), not its bytes: a damaged
// cache can abort the process, and one left beside another bundle of the same length would run that
// bundle's old code. So the cache file starts with the sha256 of the bundle it was made from and that
// of its V8 data, and is handed to V8 only when both match (~1 ms of hashing); otherwise, or when V8
// refuses it (another Node version, other flags), the bundle is compiled from source as usual.
// Nothing is written at run time.
// CommonJS (bin/package.json), as the entry point that requires it.
'use strict';

const { isAscii } = require('node:buffer');
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const { dirname, join } = require('node:path');
const vm = require('node:vm');

/** The bundle the build writes. */
const BUNDLE = join(__dirname, '..', 'dist', 'genjob.cjs');
const codeCacheOf = (bundle) => `${bundle}.cache`;

const DIGEST = 32;
const sha256 = (bytes) => createHash('sha256').update(bytes).digest();

/**
 * The bundle is a CommonJS module's wrapper around its code, `(function (exports, require, module,
 * __filename, __dirname) { ... })`: the build writes it so (the text is compiled as it is, with no wrapped
 * copy made at each start), and its cache is of exactly that text.
 */
const WRAPPER = '(function (exports, require, module, __filename, __dirname) { ';
const WRAPPER_END = '\n})';

/** The bundle's bytes compiled, with V8 `cachedData` when given (see script.cachedDataRejected). */
function compileBundle(bundle, bytes, cachedData = undefined) {
  // the build keeps the bundle ASCII, which latin1 decodes as a copy (utf8 costs several times more)
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  return new vm.Script(source, { filename: bundle, cachedData });
}

/**
 * The cache file for `bundle`'s bytes: both digests, then V8's data, from `script` (the bundle compiled
 * by compileBundle; V8's data holds every function it has compiled so far).
 */
function codeCacheFile(bundle, bytes, script = compileBundle(bundle, bytes)) {
  const data = script.createCachedData();
  return Buffer.concat([sha256(bytes), sha256(data), data]);
}

/** V8's data from a cache file, when the file is whole and was made from exactly these bundle bytes. */
function cachedDataFor(bytes, file) {
  if (file === undefined || file.length <= 2 * DIGEST) return undefined;
  const data = file.subarray(2 * DIGEST);
  const whole =
    sha256(bytes).equals(file.subarray(0, DIGEST)) && sha256(data).equals(file.subarray(DIGEST, 2 * DIGEST));
  return whole ? data : undefined;
}

/** Run the bundle, with its code cache when it holds, and return its exports ({ main }). */
function loadBundle(bundle = BUNDLE) {
  const bytes = readFileSync(bundle);
  let file;
  try {
    file = readFileSync(codeCacheOf(bundle));
  } catch {
    // no cache (or none readable): compile from source
  }
  return runBundle(bundle, compileBundle(bundle, bytes, cachedDataFor(bytes, file)));
}

/** Run the compiled bundle as the CommonJS module it is; its exports. */
function runBundle(bundle, script) {
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  return module.exports;
}

exports.BUNDLE = BUNDLE;
exports.WRAPPER = WRAPPER;
exports.WRAPPER_END = WRAPPER_END;
exports.codeCacheOf = codeCacheOf;
exports.compileBundle = compileBundle;
exports.codeCacheFile = codeCacheFile;
exports.cachedDataFor = cachedDataFor;
exports.loadBundle = loadBundle;
exports.runBundle = runBundle;
