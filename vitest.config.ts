import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A guard against a hang, nothing more: no test may pass or fail by how fast this (shared, 2-core)
    // machine is today. Limits that decide a test are on what it counts, never on wall time.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    // two test files at a time even on two cores (vitest's default there is one): most files wait on
    // processes, sshd and fsync, not on the CPU, so the suite takes about two thirds of the time
    maxWorkers: 2,
    reporters: ['default', './test/plain-summary-reporter.ts'],
    // e2e tests spawn the built CLI; `npm test` builds first (see package.json).
  },
});
