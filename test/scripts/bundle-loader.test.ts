// bin/bundle-loader.js runs the built bundle with the V8 code cache the build wrote beside it. The cache
// must be one this Node accepts (else every start pays the parse it exists to save); a missing or damaged
// cache, or one made from other bundle bytes, must cost only that (V8 itself checks no more than a
// header, and aborts the process on damaged data: the loader hands it nothing it has not checked); and
// the bundle must run in strict mode as the ES modules it was built from do.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-store.js';

const PKG = new URL('../..', import.meta.url).pathname;
const LOADER = join(PKG, 'bin', 'bundle-loader.js');

/** Evaluate an ES module snippet that imports the loader as `L`; its stdout. */
function withLoader(code: string): string {
  return execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `import * as L from ${JSON.stringify(LOADER)};\n${code}`],
    { encoding: 'utf8' },
  );
}

/** A copy of the installed layout (bin/, dist/, package.json) to damage. */
function copyOfPackage(): string {
  const dir = tempDir('gj-bundle-loader-');
  for (const p of ['bin', 'dist', 'package.json']) cpSync(join(PKG, p), join(dir, p), { recursive: true });
  return dir;
}

const run = (pkg: string, args: string[], cwd?: string) =>
  execFileSync(process.execPath, [join(pkg, 'bin', 'genjob.js'), ...args], { encoding: 'utf8', cwd });
/** The version the bundle reports (a bare --version is answered without loading it). */
const bundleVersion = (pkg: string): string => JSON.parse(run(pkg, ['--version', '--json'])).version;

describe('the bundle loader', () => {
  it("hands V8 a code cache it accepts: the build's, for this Node", () => {
    const out = withLoader(
      "import { readFileSync } from 'node:fs';\n" +
        'const bytes = readFileSync(L.BUNDLE);\n' +
        'const data = L.cachedDataFor(bytes, readFileSync(L.codeCacheOf(L.BUNDLE)));\n' +
        'process.stdout.write(String(data !== undefined && !L.compileBundle(L.BUNDLE, bytes, data).cachedDataRejected));',
    );
    expect(out).toBe('true');
  });

  it('carries the code of what a start runs, not only the top level a compile alone gives', () => {
    // the build writes the cache after running show, status and push in it (scripts/warm-cache.mjs)
    const out = withLoader(
      "import { readFileSync } from 'node:fs';\n" +
        'const bytes = readFileSync(L.BUNDLE);\n' +
        'const shipped = L.cachedDataFor(bytes, readFileSync(L.codeCacheOf(L.BUNDLE)));\n' +
        'const fresh = L.compileBundle(L.BUNDLE, bytes).createCachedData();\n' +
        'process.stdout.write(JSON.stringify([shipped.length, fresh.length]));',
    );
    const [shipped, fresh] = JSON.parse(out) as [number, number];
    expect(shipped).toBeGreaterThan(fresh * 1.3);
  });

  it("names the bundle's stack frames by the file it runs from, not the build's temporary directory", () => {
    // a frame of the bundle's own code, taken where it first requires a Node module
    const preload = join(tempDir('gj-bundle-frames-'), 'frame.cjs');
    writeFileSync(
      preload,
      "const M = require('node:module'); const load = M._load; let told = false;\n" +
        'M._load = function (...a) {\n' +
        "  const f = new Error().stack.split('\\n').find((l) => l.includes('genjob.cjs:'));\n" +
        "  if (f && !told) { told = true; require('node:fs').writeSync(2, 'frame ' + f.trim() + '\\n'); }\n" +
        '  return load.apply(this, a);\n};\n',
    );
    const r = spawnSync(
      process.execPath,
      ['--require', preload, join(PKG, 'bin', 'genjob.js'), 'status', '--json'],
      {
        encoding: 'utf8',
        cwd: tempDir('gj-bundle-frames-cwd-'),
      },
    );
    const bundle = join(PKG, 'dist', 'genjob.cjs').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    expect(r.stderr).toMatch(new RegExp(`^frame at .*\\(?${bundle}:\\d+:\\d+\\)?$`, 'm'));
  });

  it('warms the cache in a store of its own, even under a temp dir inside another store', () => {
    // init found the nearest .gen/ or .git/ above the scratch repository: a stray /tmp/.gen failed the
    // build (the warm-up looked for its job in a queue that was elsewhere), and a TMPDIR inside a
    // repository would have had the warm-up mint its job there
    const pkg = copyOfPackage();
    const outer = tempDir('gj-warm-outer-');
    mkdirSync(join(outer, '.gen'));
    mkdirSync(join(outer, 'tmp'));
    const cache = join(pkg, 'dist', 'genjob.cjs.cache');
    rmSync(cache);
    const r = spawnSync(
      process.execPath,
      [join(PKG, 'scripts', 'warm-cache.mjs'), join(pkg, 'dist', 'genjob.cjs')],
      { encoding: 'utf8', env: { ...process.env, TMPDIR: join(outer, 'tmp') } },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readdirSync(join(outer, '.gen'))).toEqual([]);
    expect(readdirSync(join(outer, 'tmp'))).toEqual([]); // its scratch removed
    expect(readFileSync(cache).length).toBeGreaterThan(64);
  });

  it('hands V8 no cache made from other bundle bytes, even of the same length', () => {
    const out = withLoader(
      "import { readFileSync } from 'node:fs';\n" +
        'const bytes = readFileSync(L.BUNDLE);\n' +
        'const file = readFileSync(L.codeCacheOf(L.BUNDLE));\n' +
        'const other = Buffer.from(bytes);\n' +
        'other[other.length - 2] ^= 1;\n' +
        'process.stdout.write(JSON.stringify([L.cachedDataFor(bytes, file) !== undefined, L.cachedDataFor(other, file)]));',
    );
    expect(JSON.parse(out)).toEqual([true, null]);
  });

  it('runs the CLI with its cache damaged, foreign or missing, compiling the bundle from source', () => {
    const pkg = copyOfPackage();
    const cache = join(pkg, 'dist', 'genjob.cjs.cache');
    const version = bundleVersion(pkg);
    const good = readFileSync(cache);
    const damaged = Buffer.from(good);
    damaged.fill(0x5a, 200, 4096); // inside V8's data, past its header (this aborted the process)
    writeFileSync(cache, damaged);
    expect(bundleVersion(pkg)).toBe(version);
    writeFileSync(cache, good.subarray(0, good.length - 1000)); // cut short
    expect(bundleVersion(pkg)).toBe(version);
    writeFileSync(cache, 'not a code cache');
    expect(bundleVersion(pkg)).toBe(version);
    rmSync(cache);
    expect(bundleVersion(pkg)).toBe(version);
    // the cache of another bundle of the same length (V8 would take it: it checks only the length)
    writeFileSync(cache, good);
    const bundle = join(pkg, 'dist', 'genjob.cjs');
    const text = readFileSync(bundle, 'utf8');
    writeFileSync(bundle, text.replace(`"${version}"`, `"${'9'.repeat(version.length)}"`));
    expect(readFileSync(bundle).length).toBe(Buffer.byteLength(text));
    expect(bundleVersion(pkg)).toBe('9'.repeat(version.length));
    const repo = tempDir('gj-bundle-loader-repo-');
    execFileSync('git', ['init', '-q', repo]);
    expect(JSON.parse(run(pkg, ['status', '--json'], repo))).toMatchObject({ ok: true });
  });

  it('answers a bare --version from package.json without loading the bundle', () => {
    const pkg = copyOfPackage();
    const version = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).version;
    writeFileSync(join(pkg, 'dist', 'genjob.cjs'), 'throw new Error("the bundle was loaded");\n');
    expect(run(pkg, ['--version'])).toBe(`${version}\n`);
    expect(run(pkg, ['-V'])).toBe(`${version}\n`);
    // anything more goes to the CLI (here: the broken bundle)
    expect(() => run(pkg, ['--version', '--json'])).toThrow(/the bundle was loaded/);
    // a stdout that cannot be written: exit 5 and one EGJ_IO line, as the CLI ends then
    const full = spawnSync(process.execPath, [join(pkg, 'bin', 'genjob.js'), '--version'], {
      encoding: 'utf8',
      stdio: ['ignore', openSync('/dev/full', 'w'), 'pipe'],
    });
    expect(full.status).toBe(5);
    expect(full.stderr).toMatch(/^genjob: EGJ_IO: stdout: write failed: ENOSPC.*\n$/);
  });

  it('is ASCII, so V8 holds it as a one-byte string, decoded by a copy', () => {
    // esbuild escapes non-ASCII in strings, not in template literals or comments: write \u escapes there
    const lines = readFileSync(join(PKG, 'dist', 'genjob.cjs'), 'utf8').split('\n');
    expect(lines.filter((l) => /[^\x00-\x7f]/.test(l)).map((l) => l.trim().slice(0, 80))).toEqual([]);
  });

  it('runs the bundle in strict mode, as the ES modules it was built from', () => {
    // the build writes the CommonJS wrapper around the code with the directive first in it; the loader
    // compiles the file as it is
    const wrapper = '(function (exports, require, module, __filename, __dirname) { ';
    expect(
      readFileSync(join(PKG, 'dist', 'genjob.cjs'), 'utf8').startsWith(`${wrapper}"use strict";\n`),
    ).toBe(true);
    const probe = join(tempDir('gj-bundle-strict-'), 'probe.cjs');
    writeFileSync(
      probe,
      `${wrapper}"use strict";\nmodule.exports.strict = (function () { return this === undefined; })();\n})`,
    );
    expect(withLoader(`process.stdout.write(String(L.loadBundle(${JSON.stringify(probe)}).strict));`)).toBe(
      'true',
    );
  });
});
