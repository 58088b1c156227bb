// Which state a key is in: a key lives in exactly one of queue/ running/ received/ applied/ reverted/
// (applied/ wins if a crash left a received/ or reverted/ copy behind). Listing and lookup only — no parsing,
// so commands that only look (mint, status, claim) never load the job schema (see job-files.ts).
import { UsageError } from '../core/errors.js';
import { SHA256_HEX } from '../core/sha256.js';
import { deadAdvice, deadJobs, deadReason } from './dead-jobs.js';
import { listNames, readdirOrEmpty, readRecord } from './durable.js';
import type { JobState } from './layout.js';
import type { Store } from './store.js';

export const FLOW: readonly JobState[] = ['queue', 'running', 'received', 'applied', 'reverted'];
/** Which copy wins when a crash left a key in two state directories: the first found here. */
export const PRECEDENCE: readonly JobState[] = ['applied', 'reverted', 'received', 'running', 'queue'];
/** The states whose file is an apply record that embeds the job document. */
export const RECORD_STATES: ReadonlySet<JobState> = new Set(['applied', 'reverted']);

export interface StoredJob {
  state: JobState;
  file: string;
  bytes: Buffer;
}

/** The state a key is in, latest first, or undefined if it is in none. */
export function findJob(store: Store, key: string): StoredJob | undefined {
  for (const state of PRECEDENCE) {
    const file = store.layout.jobFile(state, key);
    const bytes = readRecord(store, file);
    if (bytes !== undefined) return { state, file, bytes };
  }
  return undefined;
}

export function keysIn(store: Store, state: JobState): string[] {
  return listNames(store, store.layout.dir(state));
}

/**
 * The keys in a state directory. A job file not named by a key (a branch can commit `.gen/queue/EVIL.json`)
 * is no job genjob minted: it is left out and its name pushed onto `notJobs` (`queue/EVIL.json`).
 */
export function jobKeysIn(store: Store, state: JobState, notJobs: string[]): string[] {
  const keys: string[] = [];
  for (const name of keysIn(store, state))
    if (SHA256_HEX.test(name)) keys.push(name);
    else notJobs.push(`${state}/${name}.json`);
  return keys;
}

/** One listing per state, one after another (applied/ wins over a leftover). */
function listStates(store: Store): Map<string, JobState> {
  const where = new Map<string, JobState>();
  for (const state of PRECEDENCE)
    for (const key of keysIn(store, state)) if (!where.has(key)) where.set(key, state);
  return where;
}

/**
 * Where each key of the live states is. A job that moves while the directories are listed one after
 * another (running → received after received/ was listed, before running/) is in none of them, and
 * the run gate fell back to a dead letter its cancel left before a retry and closed NOT met with the
 * job still in flight. So the states are listed twice: a move between two directories is seen by one of
 * the passes (the first lists its old directory before it, or the second its new one after it); the
 * second pass's place wins, being the later.
 */
export function liveStates(store: Store): Map<string, JobState> {
  const first = listStates(store);
  const where = listStates(store);
  for (const [key, state] of first) if (!where.has(key)) where.set(key, state);
  return where;
}

/**
 * Resolve a full key or a unique prefix of at least 4 hex characters, in either case (as git does).
 * With `dead`, keys that are only in dead/ (dropped, cancelled, dead-lettered) count too.
 */
export function resolveKey(store: Store, typed: string, opts: { dead?: boolean } = {}): string {
  const prefix = typed.toLowerCase();
  if (!/^[0-9a-f]{4,64}$/.test(prefix)) {
    throw new UsageError(
      'EGJ_BAD_KEY',
      `${JSON.stringify(typed)}: a key or key prefix is 4 to 64 hex characters`,
    );
  }
  const matches = new Set<string>();
  for (const state of FLOW) for (const k of keysIn(store, state)) if (k.startsWith(prefix)) matches.add(k);
  for (const k of listNames(store, store.layout.dir('receipts'))) if (k.startsWith(prefix)) matches.add(k);
  // a key gc pruned is still known by its tombstone (show, revert say what became of it)
  for (const k of listNames(store, store.layout.dir('tombstones'))) if (k.startsWith(prefix)) matches.add(k);
  if (opts.dead)
    for (const name of readdirOrEmpty(store, store.layout.dir('dead'))) {
      const k = /^([0-9a-f]{64})\./.exec(name)?.[1];
      if (k?.startsWith(prefix)) matches.add(k);
    }
  if (matches.size === 0) throw unknownKey(store, prefix);
  if (matches.size > 1) {
    throw new UsageError(
      'EGJ_AMBIGUOUS_KEY',
      `${prefix}: matches ${matches.size} jobs (${[...matches].map((k) => k.slice(0, 12)).join(', ')}); give more characters`,
    );
  }
  return [...matches][0]!;
}

/**
 * No job a command without dead jobs takes has this prefix. A job only in dead/ is named with its reason
 * and the command that brings it back (status and show list it: "no job" would contradict them).
 */
function unknownKey(store: Store, prefix: string): UsageError {
  const dead = deadJobs(store).filter((d) => d.key.startsWith(prefix));
  if (dead.length === 1) {
    const { key, name } = dead[0]!;
    const why = deadReason(store, name);
    const reason = why ? `${why.code}: ${why.reason.split('\n')[0]}` : 'no reason recorded';
    const advice = deadAdvice(key, why?.code);
    // work's reason for a stale job already ends with it
    const then = reason.endsWith(advice) ? '' : `; ${advice}`;
    return new UsageError('EGJ_UNKNOWN_KEY', `${prefix}: job ${key.slice(0, 12)} is dead, ${reason}${then}`);
  }
  const also = dead.length > 1 ? ` (${dead.length} dead jobs match it: genjob status --state dead)` : '';
  return new UsageError('EGJ_UNKNOWN_KEY', `${prefix}: no job with this key in ${store.layout.gen}${also}`);
}
