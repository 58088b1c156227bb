// genjob retry KEY... | --run NAME: send received jobs (aborted, rejected, or ok but unwanted: their checks
// failed), or ones in dead/ for how their run went (cancelled, out of attempts, in doubt on their host), back
// to the queue with a fresh count of attempts; each next attempt (a new epoch) makes the host generate again,
// an ok job too, into a cache entry of its own (store/retry-job.ts, worker/fresh-generation.ts). Many keys
// go on past a failure (each-key.ts); with --run, the run's jobs whose receipt is not ok and its jobs dead/
// holds for how their run went are tried.
import { withApplyLock } from '../apply/apply-lock.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { peekRecord } from '../store/durable.js';
import { retryableDead, retryJob } from '../store/retry-job.js';
import { chooseKeys, eachKey, type KeysChoice } from './each-key.js';
import { receiptSummary } from './status.js';

export async function retry(o: CommonOptions & KeysChoice): Promise<CommandResult> {
  const store = openStore(o);
  // of a run: the received jobs whose receipt is not ok, and the retryable dead ones (only in dead/: no state)
  const chosen = chooseKeys(store, o, ['received', null], {
    dead: true,
    take: (key, state) =>
      state === null
        ? retryableDead(store, key) !== undefined
        : receiptSummary(peekRecord(store, store.layout.receipt(key))).status !== 'ok',
  });
  return eachKey(
    chosen,
    'retried',
    async (key) => {
      // under the apply lock, so no apply begins between retryJob's look and its move
      const { epoch, status, finished } = await withApplyLock(store, { timeoutMs: 30_000 }, () =>
        retryJob(store, key),
      );
      const kept =
        status === 'ok' || status === 'aborted' || status === 'rejected'
          ? `its ${status} receipt of epoch ${epoch} is kept in dead/`
          : `it was ${status}; that record stays in dead/`;
      return {
        key,
        line: `${key.slice(0, 12)} back in the queue (${kept}${finished ? '; an interrupted retry finished' : ''}); the next worker generates it again`,
        json: {
          ok: true,
          key,
          previous_epoch: epoch,
          previous_status: status,
          ...(finished ? { finished } : {}),
        },
      };
    },
    o.run,
  );
}
