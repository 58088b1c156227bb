// Write the V8 code cache of a built bundle (node scripts/warm-cache.mjs DIST/genjob.cjs [RUNS-AS]) after
// running the commands that must start fastest in it, in a scratch store: show, status, push with nothing
// to push. V8's data holds every function compiled so far, so the functions such a start runs (main,
// commander, the store and journal readers, the job schema) are in the cache as bytecode instead of
// being compiled from source at every start; a cache made right after compiling holds only the
// bundle's top level. The job to show is minted by another process, so mint's code stays out of the
// cache (all of it is deserialized at every start). What ran does not matter for correctness:
// bin/bundle-loader.js hands V8 a cache only when its digests match the bundle's bytes.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeCacheFile, codeCacheOf, compileBundle, runBundle } from '../bin/bundle-loader.js';

const LOADER = fileURLToPath(new URL('../bin/bundle-loader.js', import.meta.url));
const bundle = resolve(process.argv[2]);
// V8 keeps the file name a cache was compiled under (a script compiled later with the cache names its
// frames by it, whatever name it is given): compiled under the path the bundle is run from (a second
// argument; the build's dist/genjob.cjs), not the build's temporary directory, the stack of an internal
// error names a file that exists. An installed copy names the path it was built at.
const runsAs = resolve(process.argv[3] ?? process.argv[2]);
const scratch = mkdtempSync(join(tmpdir(), 'genjob-warm-'));
try {
  // the scratch store's settings are its own: no user config, no user cache
  for (const v of ['XDG_CONFIG_HOME', 'XDG_CACHE_HOME']) {
    process.env[v] = join(scratch, v);
    mkdirSync(process.env[v]);
  }
  const root = join(scratch, 'repo');
  mkdirSync(root);
  process.chdir(root);
  const argv = ['init', 'mint', '-m', 'warm the code cache', '--create', 'new.txt'];
  // what the commands say (mint's note on stderr) is theirs, not the build's: kept, and shown on a failure
  const apart = (...args) =>
    execFileSync(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(LOADER)}).loadBundle(${JSON.stringify(bundle)}).main(${JSON.stringify(['node', 'genjob', ...args])})`,
      ],
      { stdio: 'pipe' },
    );
  // init names its root: under a temp dir that is itself inside a repository (or below a stray .gen/),
  // it would find that one above and the warm-up would write there; every later command finds root/.gen
  apart(argv[0], '--root', root);
  apart(...argv.slice(1));
  const [key] = readdirSync(join(root, '.gen', 'queue')).map((n) => n.replace(/\.json$/, ''));

  const bytes = readFileSync(bundle);
  const script = compileBundle(runsAs, bytes);
  const { main } = runBundle(bundle, script);
  const run = (...args) => main(['node', 'genjob', ...args]);
  await run('show', key);
  await run('show', '--json', key);
  await run('status');
  await run('push', '--json', `file://${join(scratch, 'none.git')}`);
  process.exitCode = 0; // a command that failed here only leaves its functions out of the cache
  writeFileSync(codeCacheOf(bundle), codeCacheFile(runsAs, bytes, script));
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
