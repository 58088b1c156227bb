// The user's seal on a gate record: `.gen/runs/<run>.gates/<n>.seal` beside `<n>.json`, an HMAC under the
// user's secret ($XDG_CACHE_HOME/genjob/secret) over the record file's sha256, bound to the run and the
// record's number. `gate` seals each record it writes, or finds already deciding exactly as it does;
// `apply --run NAME --gated` acts only on a sealed record. A record committed on a branch, copied from
// another machine or moved to another number carries no seal of the user's: its policy (how many must
// pass, which checks) is not one the user chose, however well its claims match its evidence.
import type { Store } from '../store/store.js';
import type { StoredGate } from './gate-record.js';
import type { RunRef } from './run-name.js';
import { type Seal, sealHolds, writeSeal } from './sidecar-seal.js';

const DOMAIN = 'genjob-gate-record-v1';

type Sealable = Pick<StoredGate, 'seq' | 'file' | 'sha256'>;

export function sealFile(gate: Pick<StoredGate, 'file'>): string {
  return gate.file.replace(/\.json$/, '.seal');
}

const sealOf = (ref: Pick<RunRef, 'id'>, gate: Sealable): Seal => ({
  file: sealFile(gate),
  domain: DOMAIN,
  name: `${ref.id}/${gate.seq}`,
  sha256: gate.sha256,
});

export function sealGate(store: Store, ref: Pick<RunRef, 'id'>, gate: Sealable, secret: Buffer): void {
  writeSeal(store, sealOf(ref, gate), secret);
}

/** Whether the record read as `gate` carries the user's seal. */
export function gateSealed(store: Store, ref: Pick<RunRef, 'id'>, gate: Sealable, secret: Buffer): boolean {
  return sealHolds(store, sealOf(ref, gate), secret);
}
