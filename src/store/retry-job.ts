// Retry an aborted or rejected job on purpose: its receipt and outputs go to dead/ (the old attempt
// stays recorded in attempts/ and in dead/), `attempts/<key>/retry-after` records the newest epoch,
// and the job moves received/ → queue/ last (one rename). A cancelled job (dead/ with
// EGJ_CANCELLED) is retried too: a copy of its job file goes back to queue/, its record stays in
// dead/. The attempts after the retry ask the host to generate again instead of answering with the
// result it keeps for the key, until one of them delivered its bundle (`regenerated`): an attempt
// that never reached a generator (host down, a cut send) does not use up the retry.
// A crash before the rename leaves a received job without a receipt: `retry` again finishes it.
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';
import { peekEpoch, splitEnvelope } from '../core/receipt-peek.js';
import { currentEpoch, markMinted } from './attempts.js';
import { wasCancelled } from './cancel-job.js';
import { deadJobs } from './dead-jobs.js';
import { deadLetterFile } from './dead-letter.js';
import { exists, moveState, publishExclusive, readIfExists, replaceFile } from './durable.js';
import { findJob } from './job-states.js';
import { journal } from './journal.js';
import { withKeyLock } from './key-lock.js';
import type { Store } from './store.js';

function receiptStatus(bytes: Buffer): string {
  try {
    return String(splitEnvelope(JSON.parse(bytes.toString('utf8'))).payload.status);
  } catch {
    return 'unreadable';
  }
}

export async function retryJob(store: Store, key: string): Promise<{ epoch: number; status: string }> {
  return withKeyLock(store, key, () => {
    const found = findJob(store, key);
    if (found === undefined && wasCancelled(store, key)) return requeueCancelled(store, key);
    const receiptFile = store.layout.receipt(key);
    const bytes = readIfExists(store, receiptFile);
    const status = bytes ? receiptStatus(bytes) : 'none';
    if (found?.state !== 'received' || status === 'ok') {
      const state =
        found?.state ?? (deadJobs(store).some((d) => d.key === key) ? 'dead, not cancelled' : 'unknown');
      throw new ConflictError(
        'EGJ_NOT_RETRYABLE',
        `${found?.file ?? key}: only a received job whose receipt is aborted or rejected, or a cancelled job, can be retried (this one is ${state}${found?.state === 'received' ? `, receipt ${status}` : ''})`,
      );
    }
    const epoch = markRetry(store, key);
    const why = { key, code: 'EGJ_RETRIED', reason: `retried by the user (receipt ${status})` };
    if (bytes) deadLetterFile(store, receiptFile, `${key}.receipt.e${peekEpoch(bytes) || epoch}`, why);
    if (exists(store, store.layout.outDir(key)))
      deadLetterFile(store, store.layout.outDir(key), `${key}.out`, why);
    markMinted(store, key); // a fresh count of attempts
    moveState(store, found.file, store.layout.jobFile('queue', key));
    journal(store, { event: 'retried', key, epoch, status });
    return { epoch, status };
  });
}

/** Record the retry: attempts after the key's newest epoch generate again. Returns that epoch. */
function markRetry(store: Store, key: string): number {
  const epoch = currentEpoch(store, key);
  // a job cancelled in the queue was never attempted: it has no attempts/<key>/ yet
  store.fs.mkdirSync(store.layout.attemptsDir(key), { recursive: true });
  replaceFile(store, join(store.layout.attemptsDir(key), 'retry-after'), Buffer.from(String(epoch)));
  return epoch;
}

/** A cancelled job back in the queue: a copy of its newest job file in dead/, which stays there. */
function requeueCancelled(store: Store, key: string): { epoch: number; status: string } {
  const dead = deadJobs(store).find((d) => d.key === key)!;
  const bytes = readIfExists(store, join(store.layout.dir('dead'), dead.name));
  if (bytes === undefined)
    throw new ConflictError('EGJ_NOT_RETRYABLE', `dead/${dead.name}: the cancelled job file is gone`);
  const epoch = markRetry(store, key);
  markMinted(store, key); // a fresh count of attempts
  if (!publishExclusive(store, store.layout.jobFile('queue', key), bytes))
    throw new ConflictError('EGJ_NOT_RETRYABLE', `${key.slice(0, 12)}: the job is in the queue already`);
  journal(store, { event: 'retried', key, epoch, status: 'cancelled' });
  return { epoch, status: 'cancelled' };
}

/** The epoch an `attempts/<key>/` marker holds, or undefined when there is none. */
function markedEpoch(store: Store, key: string, name: 'retry-after' | 'regenerated'): number | undefined {
  const bytes = readIfExists(store, join(store.layout.attemptsDir(key), name));
  return bytes === undefined ? undefined : Number(bytes.toString('utf8'));
}

/**
 * Whether the attempt of `epoch` comes after a `retry` and no attempt since delivered its bundle,
 * so it must make the host generate again rather than answer with the result it keeps.
 */
export function regenerateRequested(store: Store, key: string, epoch: number): boolean {
  const after = markedEpoch(store, key, 'retry-after');
  if (after === undefined || epoch <= after) return false;
  const delivered = markedEpoch(store, key, 'regenerated');
  return delivered === undefined || delivered <= after;
}

/** The attempt of `epoch` delivered its bundle with the request to generate again: later ones need not. */
export function markRegenerated(store: Store, key: string, epoch: number): void {
  replaceFile(store, join(store.layout.attemptsDir(key), 'regenerated'), Buffer.from(String(epoch)));
}
