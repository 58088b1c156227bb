import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/plain-summary-reporter.ts'],
    // e2e tests spawn the built CLI; `npm test` builds first (see package.json).
  },
});
