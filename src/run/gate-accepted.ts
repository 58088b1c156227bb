// The standing of a run's gate, as things are now: its newest gate record and whether that record is still
// current, i.e. the gate would close now with the same decision (the run's manifest and the evidence
// gathered now, whether each receipt verifies included, have the digests it names). `apply --run NAME
// --gated` takes the keys that passed in it: no record, a record not met, or a stale one is refused
// before anything is written, so apply writes exactly what the closed gate decided on, or nothing. A
// report shows a run's gate from `gateStanding` without refusing anything.
import { ConflictError, RejectedError } from '../core/errors.js';
import type { Store } from '../store/store.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { decideGate } from './gate-decision.js';
import { type CheckReader, gatherRun } from './gate-gather.js';
import {
  buildGateRecord,
  gatesDir,
  newestGate,
  newestSealedGate,
  recordPolicy,
  type StoredGate,
  sameGate,
} from './gate-record.js';
import { gateSealed } from './gate-seal.js';
import { followRun, type RunKeys, runIntent } from './run-keys.js';

/** The checks plane's reader for a gate record's required checkers (commands/gate.ts's `checkReader`). */
export type ReaderFor = (root: string, checkers: readonly string[]) => Promise<CheckReader | undefined>;

export interface GateStanding {
  run: RunKeys;
  /** The newest gate record, or undefined when the run's gate never closed. */
  gate: StoredGate | undefined;
  /** The gate would close now with the record's decision (false when there is none). */
  current: boolean;
}

/**
 * The newest gate record of run `typed` and whether it is current. Reads only. With `sealedBy` (the user's
 * secret, as the gate has it), keys are followed only along the user's own remints, as the gate follows them.
 */
export async function gateStanding(
  store: Store,
  typed: string,
  readerFor: ReaderFor,
  sealedBy?: Buffer,
): Promise<GateStanding> {
  const intent = runIntent(store, typed);
  const gate = newestGate(store, intent.ref);
  if (gate === undefined) return { run: followRun(store, intent, sealedBy), gate, current: false };
  const checkers = gate.record.policy.require_checks;
  const readChecks = await readerFor(store.root, checkers);
  // keys gc pruned keep the judgement of the user's newest sealed record (none without the secret)
  const prior = sealedBy ? newestSealedGate(store, intent.ref, sealedBy) : undefined;
  const records = await gatherRun(store, intent.intended, {
    checkers,
    ...(readChecks ? { readChecks } : {}),
    trust: loadTrustPolicy(store.root),
    ...(sealedBy ? { sealedBy } : {}),
    ...(prior ? { prior } : {}),
  });
  // the keys as the gather followed them: the same evidence the decision below is made of
  const run = { ...intent, current: records.map((r) => r.current) };
  // The record stands when the evidence gathered now, under the record's policy, closes the gate with
  // exactly the record's decision: what it claims (verdict, each key's pass, the keys themselves) counts
  // only as that decision made again, since a record committed on a branch is a file like any other. A
  // key no longer terminal (back in the queue with no receipt to set aside, a live lease on a dead job)
  // opens the gate again: then the record does not stand either.
  const policy = recordPolicy(gate.record);
  const decision = decideGate(records, policy);
  const current =
    decision.state === 'closed' &&
    sameGate(gate.record, buildGateRecord(run.ref, run.manifestSha256, policy, decision, records));
  return { run, gate, current };
}

/** The keys `apply --run NAME --gated` takes: those the newest gate record passed, when the user sealed it and it stands. */
export async function acceptedKeys(
  store: Store,
  typed: string,
  readerFor: ReaderFor,
  secret: Buffer,
): Promise<string[]> {
  const { run, gate, current } = await gateStanding(store, typed, readerFor, secret);
  if (gate === undefined)
    throw new RejectedError(
      'EGJ_GATE_MISSING',
      `${gatesDir(store, run.ref)}: run ${run.ref.id} has no closed gate; run genjob gate --run ${run.ref.id} first; nothing was applied`,
    );
  if (!gateSealed(store, run.ref, gate, secret))
    throw new RejectedError(
      'EGJ_GATE_UNSEALED',
      `${gate.file}: gate record ${gate.seq} of run ${run.ref.id} was not decided by your genjob gate (it came with a branch or from another machine, or was written by genjob 0.2); run genjob gate --run ${run.ref.id} to decide it here; nothing was applied`,
      gate.file,
    );
  const { record } = gate;
  if (record.verdict !== 'met')
    throw new RejectedError(
      'EGJ_GATE_NOT_MET',
      `${gate.file}: the gate of run ${run.ref.id} is not met (${record.rate}); nothing was applied`,
      gate.file,
    );
  if (!current)
    throw new ConflictError(
      'EGJ_GATE_STALE',
      `${gate.file}: gate record ${gate.seq} of run ${run.ref.id} is stale: receipts, dead letters or check records changed since it closed; run genjob gate --run ${run.ref.id} again; nothing was applied`,
    );
  return record.keys.filter((k) => k.pass).map((k) => k.current);
}
