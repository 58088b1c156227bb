import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A guard against a hang, nothing more: no test may pass or fail by how fast this (shared, 2-core)
    // machine is today. Limits that decide a test are on what it counts, never on wall time.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    reporters: ['default', './test/plain-summary-reporter.ts'],
    // e2e tests spawn the built CLI; `npm test` builds first (see package.json).
  },
});
