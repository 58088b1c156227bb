#!/usr/bin/env node
// Thin shim: all logic lives in the built CLI (npm run build writes dist/; bundle-loader.js runs it).
import { loadBundle } from './bundle-loader.js';

await loadBundle().main(process.argv);
