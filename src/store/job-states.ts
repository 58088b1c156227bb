// Which state a key is in: a key lives in exactly one of queue/ running/ received/ applied/
// (applied/ wins if a crash left a received/ copy behind). Listing and lookup only — no parsing,
// so commands that only look (mint, status, claim) never load the job schema (see job-files.ts).
import { UsageError } from '../core/errors.js';
import { listNames, readRecord } from './durable.js';
import type { JobState } from './layout.js';
import type { Store } from './store.js';

export const FLOW: readonly JobState[] = ['queue', 'running', 'received', 'applied'];

export interface StoredJob {
  state: JobState;
  file: string;
  bytes: Buffer;
}

/** The state a key is in, latest first, or undefined if it is in none. */
export function findJob(store: Store, key: string): StoredJob | undefined {
  for (const state of ['applied', 'received', 'running', 'queue'] as const) {
    const file = store.layout.jobFile(state, key);
    const bytes = readRecord(store, file);
    if (bytes !== undefined) return { state, file, bytes };
  }
  return undefined;
}

export function keysIn(store: Store, state: JobState): string[] {
  return listNames(store, store.layout.dir(state));
}

/** Resolve a full key or a unique prefix of at least 4 hex characters. */
export function resolveKey(store: Store, prefix: string): string {
  if (!/^[0-9a-f]{4,64}$/.test(prefix)) {
    throw new UsageError(
      'EGJ_BAD_KEY',
      `${JSON.stringify(prefix)}: a key or key prefix is 4 to 64 lower-case hex characters`,
    );
  }
  const matches = new Set<string>();
  for (const state of FLOW) for (const k of keysIn(store, state)) if (k.startsWith(prefix)) matches.add(k);
  for (const k of listNames(store, store.layout.dir('receipts'))) if (k.startsWith(prefix)) matches.add(k);
  if (matches.size === 0)
    throw new UsageError('EGJ_UNKNOWN_KEY', `${prefix}: no job with this key in ${store.layout.gen}`);
  if (matches.size > 1) {
    throw new UsageError(
      'EGJ_AMBIGUOUS_KEY',
      `${prefix}: matches ${matches.size} jobs (${[...matches].map((k) => k.slice(0, 12)).join(', ')}); give more characters`,
    );
  }
  return [...matches][0]!;
}
