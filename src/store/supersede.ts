// Supersession: a job reminted from the current tree leaves its old job file in dead/ with code
// EGJ_SUPERSEDED and `superseded_by: <new key>` in the reason (its receipt and outputs beside it), and the
// journal links both ways (`superseded` on the old key, `reminted` on the new). Following the links from
// an intended key finds the job that now stands for it (a run counts the successor's outcome), as long
// as the old key was not minted again (a key back in a live state is itself again). A link is sealed by
// the user who reminted (`link_seal` in the reason: an HMAC under their secret over both keys): a branch
// can commit a dead letter into .gen/dead/ whose link points a failed key at a job that passed, so what
// decides (the run gate, `apply --run`) follows only links sealed under the user's secret; readers that
// decide nothing (status, work on another box, whose secret is another) follow any.
import { join } from 'node:path';
import { macHolds, macOf } from '../core/mac.js';
import { deadJobs } from './dead-jobs.js';
import { deadLetterBytes } from './dead-letter.js';
import { readIfExists } from './durable.js';
import { deadLetterJob, finishGivenUp, setAsideResult } from './give-up.js';
import type { StoredJob } from './job-states.js';
import { journal } from './journal.js';
import type { Store } from './store.js';
import { readTombstone } from './tombstone.js';

export const SUPERSEDED = 'EGJ_SUPERSEDED';
/** Links followed at most from one key: more is a loop someone made by hand. */
const MAX_LINKS = 64;
const LINK_DOMAIN = 'genjob-supersede-v1';

/**
 * Move a live job (its file, receipt and outputs) to dead/ as superseded by `successor`; a job already in
 * dead/ gets a copy of its file there with that reason (`deadBytes`). The link is sealed under `secret`,
 * the reminting user's. Call under the old key's lock.
 */
export function supersede(
  store: Store,
  key: string,
  successor: string,
  from: StoredJob | { dead: Buffer },
  secret: Buffer,
): string[] {
  const why = {
    key,
    code: SUPERSEDED,
    reason: `superseded by ${successor}`,
    superseded_by: successor,
    link_seal: macOf(secret, LINK_DOMAIN, key, successor),
  };
  const names: string[] = [];
  if ('dead' in from) names.push(deadLetterBytes(store, `${key}.job`, from.dead, why));
  else {
    // the receipt and outputs first (give-up.ts): a crash leaves the job live, and remint again finishes
    const result = setAsideResult(store, key, why);
    names.push(...deadLetterJob(store, key, from, why), ...result);
  }
  journalLinks(store, key, successor);
  return names;
}

function journalLinks(store: Store, key: string, successor: string): void {
  journal(store, { event: 'superseded', key, successor, reason: `superseded by ${successor}` });
  journal(store, { event: 'reminted', key: successor, predecessor: key, reason: `successor of ${key}` });
}

/**
 * Finish a supersession a crash interrupted after the job file reached dead/: the receipt and outputs
 * still in place (a genjob that moved the job file first) follow it, and the links are journalled, also
 * when the job file was the last move and the links were not written yet. Returns the successor and where
 * they went, or undefined when there is nothing to finish. Call under the key lock.
 */
export function finishSuperseded(
  store: Store,
  key: string,
): { successor: string; dead: string[] } | undefined {
  // gc keeps a superseded job file for good but drops a pruned key's old journal lines: after gc (the
  // key's tombstone), missing links are not a crash's
  const event = readTombstone(store, key) === undefined ? 'superseded' : undefined;
  const finished = finishGivenUp(store, key, SUPERSEDED, event);
  const successor = finished?.why.superseded_by;
  if (finished === undefined || typeof successor !== 'string') return undefined;
  journalLinks(store, key, successor);
  return { successor, dead: finished.moved };
}

/**
 * The successor a dead key's newest job file names, from an index of dead/ built once (deadIndex); with
 * `sealedBy`, only when that secret sealed the link.
 */
export function successorIn(
  store: Store,
  index: ReadonlyMap<string, string>,
  key: string,
  sealedBy?: Buffer,
): string | undefined {
  const name = index.get(key);
  if (name === undefined) return undefined;
  const bytes = readIfExists(store, join(store.layout.dir('dead'), `${name}.why.json`));
  if (bytes === undefined) return undefined;
  try {
    const why = JSON.parse(bytes.toString('utf8')) as {
      code?: unknown;
      superseded_by?: unknown;
      link_seal?: unknown;
    };
    const next = why.superseded_by;
    if (why.code !== SUPERSEDED || typeof next !== 'string' || !/^[0-9a-f]{64}$/.test(next)) return undefined;
    if (sealedBy === undefined) return next;
    return typeof why.link_seal === 'string' && macHolds(sealedBy, LINK_DOMAIN, key, next, why.link_seal)
      ? next
      : undefined;
  } catch {
    return undefined;
  }
}

/** key → the name of its newest job file in dead/ (one readdir). */
export function deadIndex(store: Store): Map<string, string> {
  return new Map(deadJobs(store).map((d) => [d.key, d.name]));
}

/**
 * The job that stands for `key` now: `key` itself unless it is dead as superseded (and not live again),
 * else its successor's, followed to the end. `isLive` says whether a key is in a live state; with
 * `sealedBy`, only links that secret sealed are followed.
 */
export function currentKey(
  store: Store,
  key: string,
  index: ReadonlyMap<string, string>,
  isLive: (key: string) => boolean,
  sealedBy?: Buffer,
): string {
  let at = key;
  const seen = new Set([key]);
  for (let i = 0; i < MAX_LINKS && !isLive(at); i++) {
    const next = successorIn(store, index, at, sealedBy);
    if (next === undefined || seen.has(next)) break;
    seen.add(next);
    at = next;
  }
  return at;
}
