// work --watch also polls the open batches, every --batch-poll-interval seconds, so their answers land
// while the worker waits for new jobs. Nothing is read from the endpoint settings until a batch is open.

import { openRecords } from '../store/batch-outbox.js';
import type { Store } from '../store/store.js';
import type { BatchContext } from './batch-context.js';
import { type PollSummary, pollBatches } from './batch-poll.js';

export interface BatchWatch {
  /** Tokens reported by the receipts the polls committed so far. */
  tokens(): number;
  stop(): Promise<void>;
}

export function watchBatches(
  store: Store,
  makeContext: () => Promise<BatchContext>,
  intervalMs: number,
  onPoll: (s: PollSummary) => void,
  onError: (err: Error) => void,
): BatchWatch {
  let tokens = 0;
  let ctx: BatchContext | undefined;
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  const tick = () => {
    if (busy) return; // a slow poll is not stacked up behind
    busy = true;
    running = (async () => {
      if (openRecords(store).length === 0) return;
      ctx ??= await makeContext();
      const s = await pollBatches(ctx);
      tokens += s.tokens;
      onPoll(s);
    })()
      .catch(onError)
      .finally(() => {
        busy = false;
      });
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  return {
    tokens: () => tokens,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
