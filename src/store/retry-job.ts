// Retry a received job on purpose — aborted, rejected, or ok but not wanted (say its checks failed):
// its receipt and outputs go to dead/ (the old attempt
// stays recorded in attempts/ and in dead/), `attempts/<key>/retry-after` records the newest epoch,
// and the job moves received/ → queue/ last (one rename). A job in dead/ whose file is sound is
// retried too — cancelled (EGJ_CANCELLED), out of attempts (EGJ_ATTEMPTS_EXHAUSTED) or set aside
// because the host would not generate it again without consent (EGJ_GENERATION_IN_DOUBT): a copy of
// its job file goes back to queue/, its record stays in dead/. The attempts after the retry ask the
// host to generate again (the consent) instead of answering with the
// result it keeps for the key, until one of them delivered its bundle (`regenerated`): an attempt
// that never reached a generator (host down, a cut send) does not use up the retry.
// A crash before the rename leaves a received job without a receipt: `retry` again finishes it; one after
// it, before the journal line, leaves the job queued with no attempt since its retry-after: `retry` again
// writes the line and answers as the first would have. A job
// whose apply was interrupted is refused (interrupted-apply.ts); commands/retry.ts calls this under the
// apply lock.
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';
import { peekEpoch, splitEnvelope } from '../core/receipt-peek.js';
import { attemptsDirToWrite, currentEpoch, markMinted } from './attempts.js';
import { deadAdvice, deadJobOf, deadReason, RETRYABLE_DEAD } from './dead-jobs.js';
import { deadLetterFile } from './dead-letter.js';
import { exists, moveState, publishExclusive, readIfExists, replaceFile } from './durable.js';
import { refuseInterruptedApply } from './interrupted-apply.js';
import { findJob } from './job-states.js';
import { journal, readJournal } from './journal.js';
import { withKeyLock } from './key-lock.js';
import type { Store } from './store.js';
import { prunedState, readTombstone } from './tombstone.js';

function receiptStatus(bytes: Buffer): string {
  try {
    return String(splitEnvelope(JSON.parse(bytes.toString('utf8'))).payload.status);
  } catch {
    return 'unreadable';
  }
}

/** The key's newest job file in dead/ and what a retry says it was, when its reason allows a retry. */
export function retryableDead(store: Store, key: string): { name: string; status: string } | undefined {
  const dead = deadJobOf(store, key);
  const status = dead && RETRYABLE_DEAD.get(deadReason(store, dead.name)?.code ?? '');
  return dead && status ? { name: dead.name, status } : undefined;
}

export interface Retried {
  /** The newest epoch before the retry: attempts after it generate again. */
  epoch: number;
  /** What the attempt given up was (its receipt's status, or why its job was in dead/). */
  status: string;
  /** Set when this finished a retry a crash interrupted after its move to queue/. */
  finished?: true;
}

export async function retryJob(store: Store, key: string): Promise<Retried> {
  return withKeyLock(store, key, () => {
    const found = findJob(store, key);
    const dead = found === undefined ? retryableDead(store, key) : undefined;
    if (dead) return requeueDead(store, key, dead);
    const interrupted = found?.state === 'queue' ? interruptedRetry(store, key) : undefined;
    if (interrupted) return interrupted;
    const receiptFile = store.layout.receipt(key);
    const bytes = readIfExists(store, receiptFile);
    const status = bytes ? receiptStatus(bytes) : 'none';
    if (found?.state !== 'received') {
      const deadJob = deadJobOf(store, key);
      const state =
        found?.state ??
        (deadJob
          ? `dead for another reason: ${deadAdvice(key, deadReason(store, deadJob.name)?.code)}`
          : (prunedState(readTombstone(store, key)) ?? 'unknown'));
      throw new ConflictError(
        'EGJ_NOT_RETRYABLE',
        `${found?.file ?? key}: only a received job (whatever its receipt), or a job in dead/ that was cancelled, ran out of attempts or whose generation was in doubt, can be retried (this one is ${state})`,
      );
    }
    refuseInterruptedApply(store, key, 'EGJ_NOT_RETRYABLE', 'retry');
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

/**
 * The replay of a retry killed after its move to queue/ and before its journal line: the job waits in the
 * queue, no attempt began since its retry-after mark, and the journal has no `retried` line of that epoch.
 * The line is written and the retry answers as it would have. (With the line there, the job is simply
 * queued, and a retry of it is refused as before.)
 */
function interruptedRetry(store: Store, key: string): Retried | undefined {
  const epoch = retriedAfter(store, key);
  if (epoch === undefined || epoch !== currentEpoch(store, key)) return undefined;
  if (readJournal(store, key).some((e) => e.event === 'retried' && e.epoch === epoch)) return undefined;
  const status = retriedStatus(store, key, epoch);
  journal(store, { event: 'retried', key, epoch, status });
  return { epoch, status, finished: true };
}

/** What the attempt a retry of `epoch` gave up was: its receipt's status in dead/, or the dead job's. */
function retriedStatus(store: Store, key: string, epoch: number): string {
  const receipt = store.fs
    .readdirSync(store.layout.dir('dead'))
    .filter((n) => n.startsWith(`${key}.receipt.e${epoch}.`) && !n.endsWith('.why.json'))
    .sort()
    .at(-1);
  const bytes = receipt && readIfExists(store, join(store.layout.dir('dead'), receipt));
  if (bytes) return receiptStatus(bytes);
  const dead = deadJobOf(store, key);
  return RETRYABLE_DEAD.get((dead && deadReason(store, dead.name)?.code) ?? '') ?? 'unknown';
}

/** Record the retry: attempts after the key's newest epoch generate again. Returns that epoch. */
function markRetry(store: Store, key: string): number {
  const epoch = currentEpoch(store, key);
  // a job cancelled in the queue was never attempted: it has no attempts/<key>/ yet
  replaceFile(store, join(attemptsDirToWrite(store, key), 'retry-after'), Buffer.from(String(epoch)));
  return epoch;
}

/** A job from dead/ back in the queue: a copy of its newest job file there, which stays. */
function requeueDead(
  store: Store,
  key: string,
  dead: { name: string; status: string },
): { epoch: number; status: string } {
  const bytes = readIfExists(store, join(store.layout.dir('dead'), dead.name));
  if (bytes === undefined)
    throw new ConflictError('EGJ_NOT_RETRYABLE', `dead/${dead.name}: the job file is gone`);
  const epoch = markRetry(store, key);
  markMinted(store, key); // a fresh count of attempts
  if (!publishExclusive(store, store.layout.jobFile('queue', key), bytes))
    throw new ConflictError('EGJ_NOT_RETRYABLE', `${key.slice(0, 12)}: the job is in the queue already`);
  journal(store, { event: 'retried', key, epoch, status: dead.status });
  return { epoch, status: dead.status };
}

/** The epoch an `attempts/<key>/` marker holds, or undefined when there is none (or it is not an epoch). */
function markedEpoch(store: Store, key: string, name: 'retry-after' | 'regenerated'): number | undefined {
  const bytes = readIfExists(store, join(store.layout.attemptsDir(key), name));
  const n = bytes === undefined ? Number.NaN : Number(bytes.toString('utf8'));
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The epoch the newest `genjob retry` of the key came after, or undefined when it was never retried. */
export function retriedAfter(store: Store, key: string): number | undefined {
  return markedEpoch(store, key, 'retry-after');
}

/**
 * Whether the attempt of `epoch` comes after a `retry` and no attempt since delivered its bundle,
 * so it must make the host generate again rather than answer with the result it keeps.
 */
export function regenerateRequested(store: Store, key: string, epoch: number): boolean {
  const after = retriedAfter(store, key);
  if (after === undefined || epoch <= after) return false;
  const delivered = markedEpoch(store, key, 'regenerated');
  return delivered === undefined || delivered <= after;
}

/** The attempt of `epoch` delivered its bundle with the request to generate again: later ones need not. */
export function markRegenerated(store: Store, key: string, epoch: number): void {
  replaceFile(store, join(attemptsDirToWrite(store, key), 'regenerated'), Buffer.from(String(epoch)));
}
