// Retry an aborted or rejected job on purpose: its receipt and outputs go to dead/ (the old attempt
// stays recorded in attempts/ and in dead/), `attempts/<key>/retry-after` records the newest epoch,
// and the job moves received/ → queue/ last (one rename). The next attempt (epoch retry-after + 1)
// asks the host to generate again instead of answering with the result it keeps for the key.
// A crash before the rename leaves a received job without a receipt: `retry` again finishes it.
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';
import { peekEpoch, splitEnvelope } from '../core/receipt-peek.js';
import { currentEpoch, markMinted } from './attempts.js';
import { deadLetterFile } from './dead-letter.js';
import { exists, moveState, readIfExists, replaceFile } from './durable.js';
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
    const receiptFile = store.layout.receipt(key);
    const bytes = readIfExists(store, receiptFile);
    const status = bytes ? receiptStatus(bytes) : 'none';
    if (found?.state !== 'received' || status === 'ok') {
      throw new ConflictError(
        'EGJ_NOT_RETRYABLE',
        `${found?.file ?? key}: only a received job whose receipt is aborted or rejected can be retried (this one is ${found?.state ?? 'unknown'}${found?.state === 'received' ? `, receipt ${status}` : ''})`,
      );
    }
    const epoch = currentEpoch(store, key);
    replaceFile(store, join(store.layout.attemptsDir(key), 'retry-after'), Buffer.from(String(epoch)));
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

/** Whether the attempt of `epoch` is the first after a `retry`, and so must generate again. */
export function regenerateRequested(store: Store, key: string, epoch: number): boolean {
  const after = readIfExists(store, join(store.layout.attemptsDir(key), 'retry-after'));
  return after !== undefined && Number(after.toString('utf8')) + 1 === epoch;
}
