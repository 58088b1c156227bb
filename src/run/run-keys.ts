// The keys a `--run NAME` names: the run's sealed manifest (NAME's newest revision, or NAME@N), each
// intended key replaced by the job that stands for it now (its successor after a remint,
// store/supersede.ts). Commands acting on a run (status, work, verify, apply, check, drop, retry, cancel,
// and any other) take their keys from here; gate and apply only from a run the user sealed (run-seal.ts).
import { RejectedError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { readRecord } from '../store/durable.js';
import { liveStates } from '../store/job-states.js';
import { Store } from '../store/store.js';
import { currentKey, deadIndex } from '../store/supersede.js';
import { distinctKeys, parseManifest, type RunManifest } from './run-manifest.js';
import { manifestFile, type RunRef, resolveRun } from './run-name.js';
import { runSealed } from './run-seal.js';

/** A run as its manifest names it, its keys not yet followed. */
export interface RunIntent {
  ref: RunRef;
  manifest: RunManifest;
  /** sha256 of the manifest file's bytes. */
  manifestSha256: string;
  /** The sealed keys, in the run's order. */
  intended: string[];
}

export interface RunKeys extends RunIntent {
  /** The intended keys, each followed to the job that stands for it now. */
  current: string[];
}

/** The run `typed` names in `store`, as its manifest holds it; EGJ_UNKNOWN_RUN when there is none. */
export function runIntent(store: Store, typed: string): RunIntent {
  const ref = resolveRun(store, typed);
  const file = manifestFile(store, ref);
  const bytes = readRecord(store, file)!;
  const manifest = parseManifest(bytes, file);
  return { ref, manifest, manifestSha256: sha256Hex(bytes), intended: distinctKeys(manifest.keys) };
}

/**
 * `run` with its keys now. With `sealedBy`, a key is followed only along remint links that secret sealed
 * (store/supersede.ts).
 */
export function followRun(store: Store, run: RunIntent, sealedBy?: Buffer): RunKeys {
  const live = new Set(liveStates(store).keys());
  const dead = deadIndex(store);
  return {
    ...run,
    current: run.intended.map((k) => currentKey(store, k, dead, (x) => live.has(x), sealedBy)),
  };
}

/** The run `typed` names in `store`, with its keys now (followRun); EGJ_UNKNOWN_RUN when there is none. */
export function runKeys(store: Store, typed: string, sealedBy?: Buffer): RunKeys {
  return followRun(store, runIntent(store, typed), sealedBy);
}

/** The keys of run `name` at repository `root` as they stand now (successors followed), in the run's order. */
export function keysOfRun(root: string, name: string): string[] {
  return runKeys(new Store(root), name).current;
}

/**
 * The run `typed` names, refused (EGJ_RUN_UNSEALED, exit 3) unless the user minted it; `nothing` ends the
 * message. Its keys are not followed: the gate follows each as it gathers (gate-gather.ts).
 */
export function sealedRunIntent(store: Store, typed: string, secret: Buffer, nothing: string): RunIntent {
  const run = runIntent(store, typed);
  if (!runSealed(store, run.ref, run.manifestSha256, secret)) {
    const file = manifestFile(store, run.ref);
    throw new RejectedError(
      'EGJ_RUN_UNSEALED',
      `${file}: run ${run.ref.id} was not minted by your genjob (it came with a branch or from another machine, or was changed since); mint it here as it was minted (genjob mint … --run ${run.ref.id}: the same jobs seal it as yours), or mint a new revision; ${nothing}`,
      file,
    );
  }
  return run;
}

/** sealedRunIntent with its keys followed only along the user's own remints. */
export function sealedRunKeys(store: Store, typed: string, secret: Buffer, nothing: string): RunKeys {
  return followRun(store, sealedRunIntent(store, typed, secret, nothing), secret);
}
