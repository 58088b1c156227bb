#!/usr/bin/env node
// Thin shim: all logic lives in the built CLI (npm run build writes dist/).
import { main } from '../dist/main.js';

await main(process.argv);
