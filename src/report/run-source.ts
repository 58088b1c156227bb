// A report's run, as the run plane reads it: `gateStanding` gives the run's sealed keys (NAME is its
// newest revision), each followed to the job that stands for it now, whether the user's mint sealed the
// run, and its newest gate record with whether that record is still current and carries the user's
// seal — the judgement `apply --run NAME --gated` acts on. The report shows that record as it was
// closed and never decides a gate itself (`genjob gate` does); a bad name, a missing run or an
// unreadable file fails with the run plane's own error.
import { relative } from 'node:path';
import type { ReaderFor } from '../run/gate-accepted.js';
import { gateStanding } from '../run/gate-accepted.js';
import { policyText } from '../run/gate-decision.js';
import { gateSealed } from '../run/gate-seal.js';
import { runSealed } from '../run/run-seal.js';
import type { Store } from '../store/store.js';
import type { ReportRun } from './model.js';

/**
 * Run `typed` (`NAME` or `NAME@N`) with its gate; `readerFor` is the gate's own checks reader, `secret` the
 * user's (null: none can be kept, so no record shows as the user's).
 */
export async function readRun(
  store: Store,
  typed: string,
  readerFor: ReaderFor,
  secret: Buffer | null,
): Promise<ReportRun> {
  const { run, gate, current } = await gateStanding(store, typed, readerFor, secret ?? undefined);
  const shown = {
    name: run.ref.id,
    keys: run.current,
    sealed: secret !== null && runSealed(store, run.ref, run.manifestSha256, secret),
  };
  if (gate === undefined) return { ...shown, gate: null };
  const { record } = gate;
  const sealed = secret !== null && gateSealed(store, run.ref, gate, secret);
  return {
    ...shown,
    gate: {
      met: record.verdict === 'met',
      passed: record.passed,
      total: record.total,
      rate: record.rate,
      policy: policyText({
        requireChecks: record.policy.require_checks,
        minPass: record.policy.min_pass,
        maxFail: record.policy.max_fail,
        allowFlaky: record.policy.allow_flaky,
      }),
      file: relative(store.root, gate.file),
      recordDigest: gate.sha256,
      // an envelope's signature is checked by no one here: only a record the user's gate wrote (sealed)
      // says it was signed; a branch's envelope with any bytes for a signature is not shown as signed
      signed: sealed && gate.signed,
      stale: !current,
      sealed,
    },
  };
}
