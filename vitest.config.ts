import { defineConfig } from 'vitest/config';

/**
 * Test files that change what the whole process shares and cannot hand it back as they found it: they
 * run in a process of their own (vi.mock of node:fs; process.env replaced by a plain object).
 */
const PROCESS_STATE = [
  'test/store/remove-tree-race.test.ts',
  'test/cli/config-file.test.ts',
  // mocks the canonicalize package, which a shared module graph has already loaded unmocked
  'test/core/canonical-json-walk.test.ts',
  // mocks render-job.ts (a page that cannot be drawn), which a shared module graph has already loaded
  'test/report/write-report-undrawn.test.ts',
];

/** The files that spawn the built CLI and the processes around it, and those that run for long. */
const OWN_PROCESS = ['test/e2e/**/*.test.ts', 'test/docs/**/*.test.ts', 'test/model/**/*.test.ts'];

export default defineConfig({
  test: {
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
    // removes each test's temp directories (test/helpers/temp-store.ts), in every file
    setupFiles: ['test/helpers/after-each-test.ts'],
    // e2e tests spawn the built CLI; `npm test` builds first (see package.json).
    projects: [
      {
        // The tests that run genjob's modules in this process share one worker process file after
        // file: a fresh process per file (node, vitest and every module imported again) cost about a
        // third of their time. Each restores what it changes (env, spies, timers) in finally/afterEach.
        extends: true,
        test: {
          name: 'in-process',
          include: ['test/**/*.test.ts'],
          exclude: [...OWN_PROCESS, ...PROCESS_STATE],
          isolate: false,
        },
      },
      {
        extends: true,
        test: { name: 'isolated', include: [...OWN_PROCESS, ...PROCESS_STATE] },
      },
    ],
  },
});
