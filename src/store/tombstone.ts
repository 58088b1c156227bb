// Tombstones: .gen/tombstones/<key>.json, left by gc for every key whose material it pruned: the
// state the job ended in, when, its job and receipt digests, what was pruned and when. An applied
// key's tombstone outlives its apply record, so minting the same work order again says "already
// applied (pruned on DATE)" instead of generating it a second time, and revert says why it cannot.
import { join } from 'node:path';
import { listNames, readIfExists, replaceFile } from './durable.js';
import type { Store } from './store.js';

export const TOMBSTONE_SCHEMA = 'genjob/tombstone@1';

export interface PrunedItem {
  kind: 'out' | 'receipt' | 'promotion' | 'object' | 'applied-record' | 'dead' | 'shadow' | 'staging' | 'tmp';
  /** Relative to .gen/. */
  path: string;
  bytes: number;
}

export interface Tombstone {
  schema: typeof TOMBSTONE_SCHEMA;
  key: string;
  /** applied: never minted again; dropped/dead: given up, may be minted afresh. */
  state: 'applied' | 'dropped' | 'dead';
  finished_at: string | null;
  job_digest: string | null;
  receipt_sha256: string | null;
  pruned: PrunedItem[];
  pruned_at: string;
}

export function tombstoneFile(store: Store, key: string): string {
  return join(store.layout.dir('tombstones'), `${key}.json`);
}

export function readTombstone(store: Store, key: string): Tombstone | undefined {
  const bytes = readIfExists(store, tombstoneFile(store, key));
  if (bytes === undefined) return undefined;
  try {
    const t = JSON.parse(bytes.toString('utf8')) as Tombstone;
    return t.schema === TOMBSTONE_SCHEMA && t.key === key ? t : undefined;
  } catch {
    return undefined;
  }
}

export function tombstoneKeys(store: Store): string[] {
  return listNames(store, store.layout.dir('tombstones'));
}

/** Write (or extend) the key's tombstone before any of its material is removed. */
export function writeTombstone(store: Store, t: Tombstone): Tombstone {
  const before = readTombstone(store, t.key);
  const seen = new Set(before?.pruned.map((p) => p.path));
  const merged: Tombstone = {
    ...t,
    state: before?.state === 'applied' && t.state !== 'applied' ? 'applied' : t.state,
    job_digest: t.job_digest ?? before?.job_digest ?? null,
    receipt_sha256: t.receipt_sha256 ?? before?.receipt_sha256 ?? null,
    finished_at: t.finished_at ?? before?.finished_at ?? null,
    pruned: [...(before?.pruned ?? []), ...t.pruned.filter((p) => !seen.has(p.path))],
  };
  store.fs.mkdirSync(store.layout.dir('tombstones'), { recursive: true });
  replaceFile(store, tombstoneFile(store, t.key), Buffer.from(`${JSON.stringify(merged, null, 2)}\n`));
  return merged;
}

/** The date part of when an applied key was pruned, for "already applied (pruned on DATE)". */
export function prunedOn(t: Tombstone): string {
  return t.pruned_at.slice(0, 10);
}

/**
 * What became of a key with no job file that gc pruned ("applied, then pruned by genjob gc on DATE"),
 * for an error that would otherwise call the key unknown; undefined without a tombstone.
 */
export function prunedState(t: Tombstone | undefined): string | undefined {
  if (t === undefined) return undefined;
  const ended = t.state === 'dead' ? 'dead-lettered' : t.state;
  return `${ended}, then pruned by genjob gc on ${prunedOn(t)}`;
}
