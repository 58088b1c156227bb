// The jobs a run's gate accepted, for `apply --run NAME --gated`: the keys that passed in the newest gate
// record, when that record is met and still current (the receipts, dead letters and check records
// gathered now have the digest it names). No record, a record not met, or a stale one is refused before
// anything is written: apply writes exactly what the closed gate decided on, or nothing.
import { ConflictError, RejectedError } from '../core/errors.js';
import type { Store } from '../store/store.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { type CheckReader, gatherRun } from './gate-gather.js';
import { evidenceDigest, evidenceOf, gatesDir, newestGate } from './gate-record.js';
import { runKeys } from './run-keys.js';

export async function acceptedKeys(
  store: Store,
  typed: string,
  readerFor: (root: string, checkers: readonly string[]) => Promise<CheckReader | undefined>,
): Promise<string[]> {
  const run = runKeys(store, typed);
  const gate = newestGate(store, run.ref);
  if (gate === undefined)
    throw new RejectedError(
      'EGJ_GATE_MISSING',
      `${gatesDir(store, run.ref)}: run ${run.ref.id} has no closed gate; run genjob gate --run ${run.ref.id} first; nothing was applied`,
    );
  const { record } = gate;
  if (record.verdict !== 'met')
    throw new RejectedError(
      'EGJ_GATE_NOT_MET',
      `${gate.file}: the gate of run ${run.ref.id} is not met (${record.rate}); nothing was applied`,
      gate.file,
    );
  const checkers = record.policy.require_checks;
  const readChecks = await readerFor(store.root, checkers);
  const records = await gatherRun(store, run.intended, {
    checkers,
    ...(readChecks ? { readChecks } : {}),
    trust: loadTrustPolicy(store.root),
  });
  if (
    record.manifest_sha256 !== run.manifestSha256 ||
    record.evidence_sha256 !== evidenceDigest(evidenceOf(records))
  )
    throw new ConflictError(
      'EGJ_GATE_STALE',
      `${gate.file}: gate record ${gate.seq} of run ${run.ref.id} is stale: receipts, dead letters or check records changed since it closed; run genjob gate --run ${run.ref.id} again; nothing was applied`,
    );
  return record.keys.filter((k) => k.pass).map((k) => k.current);
}
