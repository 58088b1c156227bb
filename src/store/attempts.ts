// Attempts and epochs. Each attempt at a key is `attempts/<key>/<epoch>.json`, created
// exclusively, so epochs strictly increase and are never reused — even across crashes.
// The epoch is the fencing token: a receipt carries it, and only the newest epoch may commit.
import { join } from 'node:path';
import { peekRecord, publishWithAlias, readdirOrEmpty, readRecord, replaceFile } from './durable.js';
import { assertRealDirs } from './real-dirs.js';
import type { Store } from './store.js';

export interface Worker {
  id: string;
  host: string;
  pid: number;
  /** The worker process's start time (process-identity.ts): with host and pid, tells when it is gone. */
  start?: number;
}

export interface LeaseRecord {
  key: string;
  epoch: number;
  worker: Worker;
  ttl_s: number;
  claimed_at: string;
  destination: string;
  /** The provider batch this attempt waits in (work --batch); its poller keeps the lease alive. */
  batch?: string;
}

/**
 * Whether a parsed lease file has the shape every reader of a lease relies on (the worker's identity,
 * the epoch). A lease file is read from `.gen/`, which a checked-out branch may have committed: valid
 * JSON of another shape is no lease, as a torn one is.
 */
export function isLeaseRecord(v: unknown): v is LeaseRecord {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const r = v as Record<string, unknown>;
  const w = r.worker as Record<string, unknown> | null | undefined;
  return (
    typeof r.key === 'string' &&
    Number.isSafeInteger(r.epoch) &&
    typeof r.ttl_s === 'number' &&
    typeof r.claimed_at === 'string' &&
    typeof r.destination === 'string' &&
    (r.batch === undefined || typeof r.batch === 'string') &&
    typeof w === 'object' &&
    w !== null &&
    typeof w.id === 'string' &&
    typeof w.host === 'string' &&
    Number.isSafeInteger(w.pid) &&
    (w.start === undefined || typeof w.start === 'number')
  );
}

/** Epochs recorded for a key, ascending. */
export function epochsOf(store: Store, key: string): number[] {
  return readdirOrEmpty(store, store.layout.attemptsDir(key))
    .map((n) => /^(\d+)\.json$/.exec(n)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** The newest epoch of a key (0 when it was never attempted). */
export function currentEpoch(store: Store, key: string): number {
  return epochsOf(store, key).at(-1) ?? 0;
}

/**
 * The lease-shaped record at `path` (an attempt, or the lease, its second name), or undefined when
 * there is none to trust: missing, not a regular file (a FIFO or link), torn by a crash, or valid
 * JSON of another shape (a branch may commit `.gen/`). An I/O error still throws.
 */
export function readLeaseShaped(store: Store, path: string): LeaseRecord | undefined {
  const bytes = peekRecord(store, path); // a FIFO or link reads as no bytes, which parse as nothing
  if (bytes === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
  return isLeaseRecord(parsed) ? parsed : undefined;
}

export function readAttempt(store: Store, key: string, epoch: number): LeaseRecord | undefined {
  return readLeaseShaped(store, store.layout.attempt(key, epoch));
}

/**
 * Attempts made since the job was last minted. Epochs are never reused, so a job minted again
 * after it was dropped keeps counting from its old epochs; `attempts/<key>/minted-after` holds
 * the newest epoch at that mint, and only later epochs count against --max-attempts.
 */
export function attemptsSinceMint(store: Store, key: string): number {
  const base = mintedAfter(store, key);
  return epochsOf(store, key).filter((e) => e > base && !unspent(store, key, e)).length;
}

/**
 * The newest epoch when the key was last minted afresh (`attempts/<key>/minted-after`), 0 when it never
 * was (or the marker is not an epoch): the attempts up to it belong to a job given up before.
 */
export function mintedAfter(store: Store, key: string): number {
  const base = Number(
    readRecord(store, join(store.layout.attemptsDir(key), 'minted-after'))?.toString('utf8') ?? 0,
  );
  return Number.isSafeInteger(base) ? base : 0;
}

/**
 * The key's attempts/ directory, made if missing, to write into: a real directory, never a link (keys are
 * known before minting, so a branch can commit `.gen/attempts/<key>` as a link out of the repository).
 */
export function attemptsDirToWrite(store: Store, key: string): string {
  const dir = store.layout.attemptsDir(key);
  store.fs.mkdirSync(dir, { recursive: true });
  assertRealDirs(store, [dir], 'genjob', 'writes');
  return dir;
}

/** An attempt that never reached a model (its batch expired or was cancelled unanswered) is not counted. */
export function markUnspent(store: Store, key: string, epoch: number): void {
  replaceFile(store, join(attemptsDirToWrite(store, key), `${epoch}.unspent`), Buffer.from(''));
}

function unspent(store: Store, key: string, epoch: number): boolean {
  return readRecord(store, join(store.layout.attemptsDir(key), `${epoch}.unspent`)) !== undefined;
}

/**
 * On a fresh mint of a key that was attempted before (dropped, dead-lettered), restart the count: the
 * attempts up to `newest` (the key's newest epoch, read before the job is there to claim) are its earlier
 * life's.
 */
export function markMinted(store: Store, key: string, newest = currentEpoch(store, key)): void {
  if (newest > 0)
    replaceFile(store, join(attemptsDirToWrite(store, key), 'minted-after'), Buffer.from(String(newest)));
}

/** Record a new attempt with the next free epoch and make it the key's lease. */
export function beginAttempt(
  store: Store,
  key: string,
  worker: Worker,
  ttlS: number,
  destination: string,
): LeaseRecord {
  attemptsDirToWrite(store, key);
  let epoch = currentEpoch(store, key) + 1;
  for (;;) {
    const record: LeaseRecord = {
      key,
      epoch,
      worker,
      ttl_s: ttlS,
      claimed_at: new Date().toISOString(),
      destination,
    };
    const bytes = Buffer.from(`${JSON.stringify(record)}\n`);
    // the lease is the record itself under a second name: one temp written and fsynced, not two
    if (publishWithAlias(store, store.layout.attempt(key, epoch), store.layout.lease(key), bytes))
      return record;
    epoch += 1; // someone recorded this epoch first: never reuse it
  }
}
