// The user's seal on a run manifest: `.gen/runs/<id>.seal` beside `<id>.json`, an HMAC under the user's
// secret ($XDG_CACHE_HOME/genjob/secret) over the manifest file's sha256, bound to the run's id. The
// manifest names the keys a gate counts, so one committed on a branch, copied from another machine or
// written by hand could leave out the jobs that fail and turn the pass rate, or add jobs of its own.
// `mint --run` seals the manifest it writes, or one it finds holding exactly the run it would write
// (run-manifest.ts); `gate` decides and `apply --run` acts only on a run the user sealed. Workers,
// checks and status read any manifest: they decide nothing from it.
import { join } from 'node:path';
import type { Store } from '../store/store.js';
import { type RunRef, runsDir } from './run-name.js';
import { type Seal, sealHolds, writeSeal } from './sidecar-seal.js';

const DOMAIN = 'genjob-run-manifest-v1';

export function runSealFile(store: Store, ref: Pick<RunRef, 'id'>): string {
  return join(runsDir(store), `${ref.id}.seal`);
}

const sealOf = (store: Store, ref: Pick<RunRef, 'id'>, manifestSha256: string): Seal => ({
  file: runSealFile(store, ref),
  domain: DOMAIN,
  name: ref.id,
  sha256: manifestSha256,
});

/** Seal the manifest whose bytes have sha256 `manifestSha256` as the user's run. */
export function sealRun(store: Store, ref: Pick<RunRef, 'id'>, manifestSha256: string, secret: Buffer): void {
  writeSeal(store, sealOf(store, ref, manifestSha256), secret);
}

/** Whether the manifest with sha256 `manifestSha256` carries the user's seal. */
export function runSealed(
  store: Store,
  ref: Pick<RunRef, 'id'>,
  manifestSha256: string,
  secret: Buffer,
): boolean {
  return sealHolds(store, sealOf(store, ref, manifestSha256), secret);
}
