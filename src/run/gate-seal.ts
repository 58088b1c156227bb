// The user's seal on a gate record: `.gen/runs/<run>.gates/<n>.seal` beside `<n>.json`, an HMAC under the
// user's secret ($XDG_CACHE_HOME/genjob/secret) over the record file's sha256, bound to the run and the
// record's number. `gate` seals each record it writes, or finds already deciding exactly as it does;
// `apply --run NAME --gated` acts only on a sealed record. A record committed on a branch, copied from
// another machine or moved to another number carries no seal of the user's: its policy (how many must
// pass, which checks) is not one the user chose, however well its claims match its evidence.
import { macHolds, macOf } from '../core/mac.js';
import { readIfExists, replaceFile } from '../store/durable.js';
import type { Store } from '../store/store.js';
import type { StoredGate } from './gate-record.js';
import type { RunRef } from './run-name.js';

const DOMAIN = 'genjob-gate-record-v1';
/** A seal is 64 hex digits and a newline; a bigger file is no seal. */
const MAX_SEAL_BYTES = 1024;

type Sealable = Pick<StoredGate, 'seq' | 'file' | 'sha256'>;

export function sealFile(gate: Pick<StoredGate, 'file'>): string {
  return gate.file.replace(/\.json$/, '.seal');
}

const nameOf = (ref: Pick<RunRef, 'id'>, gate: Sealable) => `${ref.id}/${gate.seq}`;

export function sealGate(store: Store, ref: Pick<RunRef, 'id'>, gate: Sealable, secret: Buffer): void {
  const mac = macOf(secret, DOMAIN, nameOf(ref, gate), gate.sha256);
  replaceFile(store, sealFile(gate), Buffer.from(`${mac}\n`));
}

/** Whether the record read as `gate` carries the user's seal (a seal that is not a readable file is none). */
export function gateSealed(store: Store, ref: Pick<RunRef, 'id'>, gate: Sealable, secret: Buffer): boolean {
  let bytes: Buffer | undefined;
  try {
    bytes = readIfExists(store, sealFile(gate), MAX_SEAL_BYTES);
  } catch /* Stryker disable next-line BlockStatement: a seal that cannot be read is none, as one that is absent */ {
    return false;
  }
  return (
    bytes !== undefined && macHolds(secret, DOMAIN, nameOf(ref, gate), gate.sha256, bytes.toString('utf8'))
  );
}
