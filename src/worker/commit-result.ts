// Commit a verified-looking result: out/<key>/ then receipts/<key>.json then running → received.
// The receipt's exclusive create is the commit point. Under the key lock we first re-check that
// our epoch is still the newest and the job is still ours; a stood-down worker commits nothing.
// A receipt already there from an older epoch is superseded: it is moved to dead/, never clobbered.
import { dirname } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { peekEpoch } from '../core/receipt-peek.js';
import { currentEpoch } from '../store/attempts.js';
import { deadLetterBytes, deadLetterFile } from '../store/dead-letter.js';
import { exists, fsyncDir, moveState, publishExclusive, readRecord } from '../store/durable.js';
import { journal } from '../store/journal.js';
import { withKeyLock } from '../store/key-lock.js';
import { readLease, removeLease } from '../store/lease.js';
import type { Store } from '../store/store.js';

export type CommitOutcome = { committed: true } | { committed: false; reason: string };

export async function commitResult(
  store: Store,
  key: string,
  epoch: number,
  receiptBytes: Buffer,
  stagingDir: string,
  /** Journalled with the `received` event (e.g. the destination that answered). */
  facts: Record<string, unknown> = {},
): Promise<CommitOutcome> {
  const { layout } = store;
  return withKeyLock(store, key, async (): Promise<CommitOutcome> => {
    const lease = readLease(store, key);
    const newest = currentEpoch(store, key);
    const running = exists(store, layout.jobFile('running', key));
    if (lease?.epoch !== epoch || newest !== epoch || !running) {
      // the lease gone with the epochs equal: reaped or cancelled; say so rather than leave "1, the newest is 1"
      const leaseNote =
        lease === undefined && newest === epoch ? ', its lease was removed (reaped or cancelled)' : '';
      const reason = `lease lost: this attempt is epoch ${epoch}, the newest is ${newest}${leaseNote}${running ? '' : ' and the job is no longer running here'}`;
      deadLetterBytes(store, `${key}.receipt.e${epoch}`, receiptBytes, {
        key,
        code: 'EGJ_EPOCH_SUPERSEDED',
        reason,
        epoch,
      });
      store.fs.rmSync(stagingDir, { recursive: true, force: true });
      return { committed: false, reason };
    }
    // 0. a receipt of this or a newer epoch already stands: leave it and its out/<key>/ alone
    const standing = readRecord(store, layout.receipt(key));
    if (standing !== undefined && !standing.equals(receiptBytes) && peekEpoch(standing) >= epoch) {
      const reason = `a receipt of epoch ${peekEpoch(standing)} is already committed`;
      deadLetterBytes(store, `${key}.receipt.e${epoch}`, receiptBytes, {
        key,
        code: 'EGJ_DUPLICATE_RECEIPT',
        reason,
        epoch,
      });
      store.fs.rmSync(stagingDir, { recursive: true, force: true });
      return { committed: false, reason };
    }
    // 1. the bytes: a leftover out/<key>/ (a crash before its receipt landed) is kept in dead/
    const out = layout.outDir(key);
    // Stryker disable next-line ConditionalExpression: as true, deadLetterFile of a missing out/ is a no-op (ENOENT → null)
    if (exists(store, out)) {
      deadLetterFile(store, out, `${key}.out`, {
        key,
        code: 'EGJ_OUT_REPLACED',
        reason: 'outputs left by an earlier attempt without a committed receipt',
      });
    }
    store.fs.renameSync(stagingDir, out);
    fsyncDir(store, layout.dir('out'));
    fsyncDir(store, dirname(stagingDir)); // a move: both directories, like moveState
    // 2. the receipt (commit point)
    for (;;) {
      if (publishExclusive(store, layout.receipt(key), receiptBytes)) break;
      const existing = readRecord(store, layout.receipt(key));
      if (existing === undefined) continue;
      if (existing.equals(receiptBytes)) break;
      // unreadable peeks as 0: treated as older, so the newest epoch's receipt stands
      const existingEpoch = peekEpoch(existing);
      if (existingEpoch < epoch) {
        deadLetterFile(store, layout.receipt(key), `${key}.receipt.e${existingEpoch}`, {
          key,
          code: 'EGJ_EPOCH_SUPERSEDED',
          reason: `receipt of epoch ${existingEpoch} superseded by epoch ${epoch}`,
        });
        continue;
      }
      const reason = `a receipt of epoch ${existingEpoch} is already committed`;
      deadLetterBytes(store, `${key}.receipt.e${epoch}`, receiptBytes, {
        key,
        code: 'EGJ_DUPLICATE_RECEIPT',
        reason,
        epoch,
      });
      return { committed: false, reason };
    }
    // 3. the job's state
    try {
      moveState(store, layout.jobFile('running', key), layout.jobFile('received', key));
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
    removeLease(store, key, epoch);
    return { committed: true };
  }).then((outcome) => {
    if (outcome.committed) journal(store, { event: 'received', key, epoch, ...facts });
    return outcome;
  });
}
