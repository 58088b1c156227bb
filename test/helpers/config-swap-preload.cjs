// Test-side race for real processes: `NODE_OPTIONS="--require <this file>"` with GENJOB_SWAP_CONFIG=<text>
// makes the first read of a genjob.config.json replace that file with <text> right after reading it,
// as a `git checkout` or an editor saving in another terminal would. Nothing in shipped code knows about it.
const fs = require('node:fs');

const text = process.env.GENJOB_SWAP_CONFIG;
const real = fs.readFileSync;
let swapped = false;
fs.readFileSync = function readFileSync(path, ...rest) {
  const out = real.call(this, path, ...rest);
  if (text !== undefined && !swapped && typeof path === 'string' && path.endsWith('genjob.config.json')) {
    swapped = true;
    fs.writeFileSync(path, text);
  }
  return out;
};
