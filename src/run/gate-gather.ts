// Gather what the run gate decides on, from .gen/ as it is now: per intended key, the job that stands for
// it (its successor after a remint), that job's outcome (pending, a committed receipt — its digest, its
// status and, when ok, whether it verifies — or a dead letter and its reason), whether a live lease is
// held on it, and the required checkers' states from `readChecks` (the checks plane's reader, passed in,
// so tests drive the gate with any reader). Reads only: the decision is gate-decision.ts's.
import { wellFormed } from '../core/canonical-json.js';
import { MAX_WAIT_SECONDS } from '../core/duration.js';
import { GenjobError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { peekReceipt } from '../core/receipt-peek.js';
import { sha256Hex } from '../core/sha256.js';
import { deadReason } from '../store/dead-jobs.js';
import { readRecord } from '../store/durable.js';
import { liveStates } from '../store/job-states.js';
import type { JobState } from '../store/layout.js';
import { leaseAgeMs, readLease } from '../store/lease.js';
import { ownerGone } from '../store/process-identity.js';
import type { Store } from '../store/store.js';
import { currentKey, deadIndex } from '../store/supersede.js';
import { prunedOn, readTombstone } from '../store/tombstone.js';
import { verifyKey } from '../verify/verify-key.js';
import type { CheckView, KeyRecords, Outcome } from './gate-decision.js';
import type { GateRecord } from './gate-record.js';

/** The checks plane's reader: each named checker's state for the key's current receipt. */
export type CheckReader = (
  root: string,
  key: string,
  checkers: readonly string[],
) => Promise<readonly CheckView[]>;

export interface GatherOptions {
  checkers: readonly string[];
  /** Required when `checkers` is not empty. */
  readChecks?: CheckReader;
  trust: ReceiptTrustPolicy;
  /** The time leases are judged at (ms); defaults to now. */
  now?: number;
  /** Follow only remint links this secret (the user's) sealed (store/supersede.ts). */
  sealedBy?: Buffer;
  /**
   * The user's newest gate record of the run (its seal checked by the caller): a key whose material gc
   * pruned since keeps the judgement this record gave that very job.
   */
  prior?: GateRecord;
}

function receiptStatus(payload: Record<string, unknown> | null): string {
  try {
    return payload === null ? 'unreadable' : fileText(String(payload.status));
  } catch {
    return 'unreadable';
  }
}

/** Characters of a file's own text (a receipt's status, a dead letter's code) a gate record repeats. */
const MAX_FILE_TEXT = 200;

/**
 * Text read from a file anyone can write (a dead letter a branch commits, a forged receipt), as the gate
 * record can hold it: a lone UTF-16 surrogate (JSON's `"\ud800"`) becomes U+FFFD and the text is cut.
 * Canonical JSON has no form for a lone surrogate: one in a dead letter's code stopped every `gate`.
 */
function fileText(text: string): string {
  const chars = Array.from(text);
  return wellFormed(chars.length > MAX_FILE_TEXT ? `${chars.slice(0, MAX_FILE_TEXT).join('')}…` : text);
}

/**
 * A lease within its TTL whose holder is not a process of this host known to be gone. A TTL longer than
 * `work --lease-ttl` can set (a week) is no worker's: a lease a branch commits under .gen/leases/ for a
 * dead job, with `"ttl_s": 1e12` and another host named, held its gate open for good (reap leaves the
 * leases of jobs that are not running), and flipped a closed gate's record stale.
 */
export function leaseLive(store: Store, key: string, now: number): boolean {
  const lease = readLease(store, key);
  if (lease === undefined) return false;
  const ttlS = Number(lease.ttl_s);
  if (!(ttlS > 0 && ttlS <= MAX_WAIT_SECONDS)) return false;
  const ttlMs = ttlS * 1000;
  return leaseAgeMs(store, key, now) <= ttlMs && !ownerGone(lease.worker ?? {});
}

async function outcomeOf(
  store: Store,
  key: string,
  state: JobState | undefined,
  dead: ReadonlyMap<string, string>,
  trust: ReceiptTrustPolicy,
): Promise<Outcome> {
  if (state === 'queue' || state === 'running') return { kind: 'pending', state };
  if (state === undefined) {
    const name = dead.get(key);
    if (name === undefined) {
      // gc left a tombstone where it pruned the key's material (applied, or dead and out of the flow)
      const tomb = readTombstone(store, key);
      return tomb === undefined
        ? { kind: 'pending', state: 'unknown' }
        : { kind: 'pruned', state: tomb.state, prunedOn: prunedOn(tomb), receiptDigest: tomb.receipt_sha256 };
    }
    const why = deadReason(store, name);
    return {
      kind: 'dead',
      name,
      code: fileText(why?.code ?? '(none)'),
      reason: fileText(why?.reason ?? '(no reason recorded)'),
    };
  }
  const bytes = readRecord(store, store.layout.receipt(key));
  // a retry sets the receipt aside before it requeues the job: received without one is on its way back
  if (bytes === undefined && state === 'received') return { kind: 'pending', state: 'received' };
  // parsed once: its status here, its plane in verifyKey, which checks these very bytes
  const peeked = bytes === undefined ? undefined : peekReceipt(bytes);
  const status = peeked === undefined ? 'missing' : receiptStatus(peeked.payload);
  const receiptDigest = bytes === undefined ? null : sha256Hex(bytes);
  if (status !== 'ok') return { kind: 'receipt', status, receiptDigest, problem: null };
  try {
    await verifyKey(store, key, trust, state, peeked);
    return { kind: 'receipt', status, receiptDigest, problem: null };
  } catch (err) {
    // a receipt that does not verify fails its key; a disk that failed while verifying it decides nothing
    if (!(err instanceof GenjobError) || err.exitCode === EXIT.IO) throw err;
    return { kind: 'receipt', status, receiptDigest, problem: wellFormed(`${err.code}: ${err.message}`) };
  }
}

/**
 * `prior`'s entry for the job that stands for `key` now, when it judged this very job: the same current
 * key, and for an applied one the receipt its tombstone names.
 */
function carriedFrom(
  prior: GateRecord | undefined,
  key: string,
  current: string,
  pruned: Extract<Outcome, { kind: 'pruned' }>,
): GateRecord['keys'][number] | undefined {
  const k = prior?.keys.find((e) => e.key === key && e.current === current);
  if (k === undefined || !Array.isArray(k.checks)) return undefined;
  return pruned.receiptDigest !== null && k.receipt !== pruned.receiptDigest ? undefined : k;
}

/** The records of every intended key, in the run's order. */
export async function gatherRun(
  store: Store,
  keys: readonly string[],
  o: GatherOptions,
): Promise<KeyRecords[]> {
  if (o.checkers.length > 0 && o.readChecks === undefined)
    throw new Error('gatherRun: required checkers need a check reader');
  const now = o.now ?? Date.now();
  const where = liveStates(store);
  const dead = deadIndex(store);
  const out: KeyRecords[] = new Array(keys.length);
  let next = 0;
  // verifying hashes each ok receipt's outputs: a few keys in flight keep the disk busy
  const workers = Array.from({ length: Math.min(8, keys.length) }, async () => {
    for (let i = next++; i < keys.length; i = next++) {
      const key = keys[i]!;
      const current = currentKey(store, key, dead, (k) => where.has(k), o.sealedBy);
      const outcome = await outcomeOf(store, current, where.get(current), dead, o.trust);
      const checked = outcome.kind === 'receipt' && outcome.status === 'ok' && outcome.problem === null;
      const checks =
        checked && o.checkers.length > 0 ? await o.readChecks!(store.root, current, o.checkers) : [];
      // a lease matters only where no receipt stands (a job with a receipt has released it)
      const liveLease = outcome.kind !== 'receipt' && leaseLive(store, current, now);
      const carried = outcome.kind === 'pruned' ? carriedFrom(o.prior, key, current, outcome) : undefined;
      out[i] = { key, current, outcome, liveLease, checks, ...(carried ? { carried } : {}) };
    }
  });
  await Promise.all(workers);
  return out;
}
