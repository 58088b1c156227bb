// Supersession: a job reminted from the current tree leaves its old job file in dead/ with code
// EGJ_SUPERSEDED and `superseded_by: <new key>` in the reason (its receipt and outputs beside it), and the
// journal links both ways (`superseded` on the old key, `reminted` on the new). Following the links from
// an intended key finds the job that now stands for it (a run counts the successor's outcome), as long
// as the old key was not minted again (a key back in a live state is itself again).
import { join } from 'node:path';
import { deadJobs } from './dead-jobs.js';
import { deadLetterBytes, deadLetterFile } from './dead-letter.js';
import { exists, readIfExists } from './durable.js';
import type { StoredJob } from './job-states.js';
import { journal } from './journal.js';
import type { Store } from './store.js';

export const SUPERSEDED = 'EGJ_SUPERSEDED';
/** Links followed at most from one key: more is a loop someone made by hand. */
const MAX_LINKS = 64;

/**
 * Move a live job (its file, receipt and outputs) to dead/ as superseded by `successor`; a job already in
 * dead/ gets a copy of its file there with that reason (`deadBytes`). Call under the old key's lock.
 */
export function supersede(
  store: Store,
  key: string,
  successor: string,
  from: StoredJob | { dead: Buffer },
): string[] {
  const why = { key, code: SUPERSEDED, reason: `superseded by ${successor}`, superseded_by: successor };
  const names: Array<string | null> = [];
  if ('dead' in from) names.push(deadLetterBytes(store, `${key}.job`, from.dead, why));
  else {
    names.push(deadLetterFile(store, from.file, `${key}.job`, why));
    if (exists(store, store.layout.receipt(key)))
      names.push(deadLetterFile(store, store.layout.receipt(key), `${key}.receipt`, why));
    if (exists(store, store.layout.outDir(key)))
      names.push(deadLetterFile(store, store.layout.outDir(key), `${key}.out`, why));
  }
  journal(store, { event: 'superseded', key, successor, reason: `superseded by ${successor}` });
  journal(store, { event: 'reminted', key: successor, predecessor: key, reason: `successor of ${key}` });
  return names.filter((n): n is string => n !== null);
}

/** The successor a dead key's newest job file names, from an index of dead/ built once (deadIndex). */
export function successorIn(
  store: Store,
  index: ReadonlyMap<string, string>,
  key: string,
): string | undefined {
  const name = index.get(key);
  if (name === undefined) return undefined;
  const bytes = readIfExists(store, join(store.layout.dir('dead'), `${name}.why.json`));
  if (bytes === undefined) return undefined;
  try {
    const why = JSON.parse(bytes.toString('utf8')) as { code?: unknown; superseded_by?: unknown };
    return why.code === SUPERSEDED &&
      typeof why.superseded_by === 'string' &&
      /^[0-9a-f]{64}$/.test(why.superseded_by)
      ? why.superseded_by
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
 * else its successor's, followed to the end. `isLive` says whether a key is in a live state.
 */
export function currentKey(
  store: Store,
  key: string,
  index: ReadonlyMap<string, string>,
  isLive: (key: string) => boolean,
): string {
  let at = key;
  const seen = new Set([key]);
  for (let i = 0; i < MAX_LINKS && !isLive(at); i++) {
    const next = successorIn(store, index, at);
    if (next === undefined || seen.has(next)) break;
    seen.add(next);
    at = next;
  }
  return at;
}
