import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A guard against a hang, nothing more: no test may pass or fail by how fast this (shared, 2-core)
    // machine is today. Limits that decide a test are on what it counts, never on wall time.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    // expect.poll waits for something another process does (a browser's filter, a detached $BROWSER):
    // its 1 s default is a wall-time limit a loaded box can miss, so it too is only a hang guard
    expect: { poll: { timeout: 60_000 } },
    pool: 'forks',
    // Two test files at a time, whatever the core count (vitest would take one on a 2-core box): most of
    // a file's time is spent waiting on the processes it starts (the CLI, sshd, bubblewrap, git), so two
    // keep both cores busy; three gained 3 % on a 2-core box (796 s against 824 s), the cores being the
    // limit by then. No test shares a port, a directory or a process with another file (each starts its
    // own sshd, Slurm, servers, in its own temp dir).
    maxWorkers: 2,
    reporters: ['default', './test/plain-summary-reporter.ts'],
    // e2e tests spawn the built CLI; `npm test` builds first (see package.json).
  },
});
