#!/usr/bin/env node
// Thin shim: all logic lives in the built CLI (npm run build writes dist/; bundle-loader.js runs it).
// bin/ is CommonJS (bin/package.json): an ES module entry point starts Node's ES module loader first,
// a few ms of every command. `genjob --version` alone is answered here from package.json (the CLI's
// VERSION is kept equal to it), without reading, checking and compiling the 2 MB bundle.
'use strict';

const argv = process.argv;
if (argv.length === 3 && (argv[2] === '--version' || argv[2] === '-V')) {
  try {
    // fd 1 as is: process.stdout would set up a stream, and its 'error' event, for one line
    require('node:fs').writeSync(1, `${require('../package.json').version}\n`);
  } catch (err) {
    // as the CLI does for a stdout it cannot write: exit 5, one line unless the reader left (EPIPE)
    process.exitCode = 5;
    if (err.code !== 'EPIPE') process.stderr.write(`genjob: EGJ_IO: stdout: write failed: ${err.message}\n`);
  }
} else {
  require('./bundle-loader.js').loadBundle().main(argv);
}
