// The test set StrykerJS runs against each mutant: every test that imports src/ modules.
// The end-to-end tests spawn the built CLI (dist/), which a mutant in src/ never reaches, so they
// are left out here; the guarantees they check are also pinned by unit, crash-model and property tests.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // removes each test's temp directories (test/helpers/temp-store.ts)
    setupFiles: ['test/helpers/after-each-test.ts'],
  },
});
