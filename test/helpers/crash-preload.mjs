// Test-side fault injection for real processes: `node --import <this file> bin/genjob.js ...` with
// GENJOB_CRASH='{"call":"renameSync","match":"/\\.gen/out/","arg":1,"nth":1,"when":"after"}' makes the
// process SIGKILL itself at the nth call of fs.<call> whose string argument (argument `arg`, or any)
// matches `match` — just before or just after the real call. With `"pauseMs":N` it does not die there
// but stops for N ms and goes on (to hold a process in a window while another one runs). Nothing in
// shipped code knows about it: it patches node:fs and re-syncs the ESM named exports that the bundled
// CLI imports.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const raw = process.env.GENJOB_CRASH;
if (raw) {
  const spec = JSON.parse(raw);
  const re = new RegExp(spec.match);
  const real = fs[spec.call];
  if (typeof real !== 'function') throw new Error(`crash-preload: fs.${spec.call} is not a function`);
  let seen = 0;
  const die = () => {
    if (typeof spec.pauseMs === 'number') {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, spec.pauseMs);
      return;
    }
    process.kill(process.pid, 'SIGKILL');
    // SIGKILL to ourselves is delivered before kill() returns; never run on
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
  };
  fs[spec.call] = function crashing(...args) {
    const candidates = typeof spec.arg === 'number' ? [args[spec.arg]] : args;
    const hit = candidates.some((a) => typeof a === 'string' && re.test(a));
    if (hit) {
      seen += 1;
      if (seen === (spec.nth ?? 1)) {
        if (spec.when === 'before') {
          die();
          return real.apply(this, args);
        }
        const result = real.apply(this, args);
        die();
        return result;
      }
    }
    return real.apply(this, args);
  };
  syncBuiltinESMExports();
}
