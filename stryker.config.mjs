// Mutation testing of the modules that carry genjob's guarantees (`npm run mutate`).
// A surviving mutant is either killed by a test named after the behaviour it protects, or marked
// equivalent in the source with `// Stryker disable next-line <mutator>: <reason>` — never a
// blanket ignore. MUTATE=<glob,glob> narrows the run (e.g. to the files a change touched).
const guarded = [
  'src/core/canonical-json.ts',
  'src/core/job.ts',
  'src/core/paths.ts',
  'src/core/receipt-decode.ts',
  'src/core/receipt-envelope.ts',
  'src/core/verify-rules.ts',
  'src/store/attempts.ts',
  'src/store/claim.ts',
  'src/store/dead-letter.ts',
  'src/store/durable.ts',
  'src/store/lease.ts',
  'src/store/lock-intents.ts',
  'src/store/lock-owner.ts',
  'src/store/reap.ts',
  'src/apply/apply-plan.ts',
  'src/apply/apply-records.ts',
  'src/apply/tree-file.ts',
  'src/apply/revert.ts',
  'src/worker/commit-result.ts',
  'src/transport/entry-policy.ts',
  'src/transport/tar-reader.ts',
  // the planes added in 0.2.0: how a generator is confined, the git merge gate, the shadow refusal
  'src/sandbox/bwrap-argv.ts',
  'src/sandbox/env-allowlist.ts',
  'src/verify/require-sandbox.ts',
  'src/git/commit-gate.ts',
  'src/git/read-material.ts',
  // the merge gate's judging since 0.3.0: its policy source, its material, merges, tree entries
  'src/git/gate-policy.ts',
  'src/git/gate-material.ts',
  'src/git/automatic-merge.ts',
  'src/git/tree-entries.ts',
  'src/git/minted-base.ts',
  'src/core/plane.ts',
  // checks: what decides a verdict, whether a record is current, and what the gate lets through
  'src/check/verdict.ts',
  'src/check/staleness.ts',
  'src/check/require-check.ts',
  // runs: the gate's decision over gathered records
  'src/run/gate-decision.ts',
  'src/run/gate-record.ts',
  'src/run/gate-seal.ts',
  'src/run/run-seal.ts',
  'src/run/sidecar-seal.ts',
  // what genjob acts on from .gen/ only when the user sealed it, and how a scratch tree is removed
  'src/core/sealed-record.ts',
  'src/store/sealed-file.ts',
  'src/store/promotion.ts',
  'src/store/batch-outbox.ts',
  'src/store/remove-tree.ts',
  // what a person reads of hostile text: the terminal's escapes, the report's one escaping place
  'src/core/hidden-chars.ts',
  'src/core/terminal-text.ts',
  'src/report/escape.ts',
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts' },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  coverageAnalysis: 'perTest',
  mutate: process.env.MUTATE ? process.env.MUTATE.split(',') : guarded,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  concurrency: 2,
  timeoutMS: 20_000,
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  thresholds: { high: 95, low: 90, break: null },
};
