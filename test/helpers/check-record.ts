// Check records written straight to .gen/checks/ with the checks plane's own encoder, for tests that
// need a job's verdicts without running a checker: facts bound to the job's receipt as it is now, the
// checker's binding at `tree` and that tree as base, one attempt per outcome (logs kept in objects/).
import { bindingsAt } from '../../src/check/binding.js';
import { loadCheckers } from '../../src/check/checker.js';
import { buildStatement, CHECK_SCHEMA, type CheckFacts, encodeRecord } from '../../src/check/record.js';
import { writeRecord } from '../../src/check/record-store.js';
import { marksOf, type Outcome, verdictOf } from '../../src/check/verdict.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { publishExclusive, readIfExists } from '../../src/store/durable.js';
import type { Store } from '../../src/store/store.js';

export interface AttemptSpec {
  outcome: Outcome;
  /** The attempt's log, kept in objects/ by its sha256. */
  log?: string;
  samples?: NonNullable<CheckFacts['attempts'][number]['samples']>;
}

/** A writer of records for the checkers `root`'s genjob.config.json declares, against HEAD's `tree`. */
export async function checkRecords(root: string, store: Store, tree: string) {
  const bindings = await bindingsAt(root, tree, loadCheckers(root));
  let sequence = 0;
  return (key: string, checker: string, attempts: AttemptSpec[], over: Partial<CheckFacts> = {}): string => {
    const receipt = readIfExists(store, store.layout.receipt(key));
    const outcomes = attempts.map((a) => a.outcome);
    const facts: CheckFacts = {
      schema: CHECK_SCHEMA,
      key,
      checker,
      kind: 'command',
      receipt_sha256: receipt ? sha256Hex(receipt) : '0'.repeat(64),
      binding_sha256: bindings.get(checker) ?? '0'.repeat(64),
      base_tree: tree,
      result_tree: tree,
      verdict: verdictOf(outcomes),
      marks: marksOf(outcomes),
      sequence: ++sequence,
      previous: null,
      attempts: attempts.map((a, i) => {
        const log = a.log === undefined ? null : Buffer.from(a.log);
        if (log) publishExclusive(store, store.layout.object(sha256Hex(log)), log);
        return {
          n: i + 1,
          outcome: a.outcome,
          exit_code: a.outcome === 'pass' ? 0 : 1,
          signal: null,
          timed_out: false,
          ms: 1500,
          log_sha256: log ? sha256Hex(log) : null,
          log_bytes: log?.length ?? 0,
          why: null,
          started_at: '2026-01-01T00:00:00.000Z',
          ...(a.samples ? { samples: a.samples } : {}),
        };
      }),
      setup: null,
      judge: null,
      sandbox: { kind: 'bwrap', network: false },
      started_at: '2026-01-01T00:00:00.000Z',
      finished_at: '2026-01-01T00:00:02.000Z',
      machine: 'test',
      ...over,
    };
    return writeRecord(store, key, checker, encodeRecord(buildStatement(facts, [])));
  };
}
