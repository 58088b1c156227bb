// genjob retry KEY: send a received job (aborted, rejected, or ok but unwanted: its checks failed), or one
// in dead/ for how its run went (cancelled, out of attempts, in doubt on its host), back to the queue with
// a fresh count of attempts; its next attempt (a new epoch) makes the host generate again (see
// store/retry-job.ts).
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { resolveKey } from '../store/job-states.js';
import { retryJob } from '../store/retry-job.js';

export async function retry(o: CommonOptions & { key: string }): Promise<CommandResult> {
  const store = openStore(o);
  const key = resolveKey(store, o.key, { dead: true }); // a cancelled or dead job is only in dead/
  const { epoch, status } = await retryJob(store, key);
  const kept =
    status === 'ok' || status === 'aborted' || status === 'rejected'
      ? `its ${status} receipt of epoch ${epoch} is kept in dead/`
      : `it was ${status}; that record stays in dead/`;
  return {
    human: `${key.slice(0, 12)} back in the queue (${kept}); the next worker generates it again`,
    json: { ok: true, key, previous_epoch: epoch, previous_status: status },
  };
}
