// The process sweep moved to src/core/process-sweep.ts (git's time limit uses it too); its names stay
// importable from here.
export { RUN_TAG_VAR, runProcesses, sweepRun } from '../core/process-sweep.js';
