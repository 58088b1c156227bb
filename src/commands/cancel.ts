// genjob cancel KEY... | --run NAME: stop queued or running jobs; each goes to dead/ with `cancelled` (see
// store/cancel-job.ts). A running job's worker stands down at its next heartbeat and has the host kill its
// generator (work-one.ts, serve-cancel.ts). A job held by a batch intent that was never sent to the
// provider ends that intent too: nothing of it was submitted, and its other jobs go back to the queue
// (worker/batch-end.ts). Many keys go on past a failure (each-key.ts). Cancelling a job that is already
// cancelled (in no state but dead/, put there by cancel) is a no-op that says so, as `show` finds it there.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { ConflictError } from '../core/errors.js';
import { openRecords, readRecord } from '../store/batch-outbox.js';
import { cancelJob, finishCancel, wasCancelled } from '../store/cancel-job.js';
import { deadJobOf, deadReason } from '../store/dead-jobs.js';
import { findJob } from '../store/job-states.js';
import type { Store } from '../store/store.js';
import { endIntent, intentHolding } from '../worker/batch-end.js';
import { lockRun } from '../worker/batch-send.js';
import { chooseKeys, eachKey, type KeysChoice } from './each-key.js';

export async function cancel(o: CommonOptions & KeysChoice & { reason?: string }): Promise<CommandResult> {
  const store = openStore(o);
  const chosen = chooseKeys(store, o, ['queue', 'running'], { dead: true });
  return eachKey(
    chosen,
    'cancelled',
    async (key) => {
      const gone = findJob(store, key) === undefined ? deadJobOf(store, key) : undefined;
      if (gone && wasCancelled(store, key)) {
        // a cancel killed after the job file moved left its lease, or (an older genjob) its receipt and outputs
        const finished = await finishCancel(store, key);
        const note = finished === undefined ? '' : '; an interrupted cancel finished';
        const dead = [gone.name, ...(finished ?? [])];
        return {
          key,
          line: `${key.slice(0, 12)} already cancelled: ${dead.map((n) => `dead/${n}`).join(', ')}${note} (genjob retry ${key.slice(0, 12)} queues it again)`,
          json: {
            ok: true,
            key,
            was: 'cancelled',
            already: true,
            dead,
            ...(finished ? { finished: true } : {}),
          },
        };
      }
      if (gone) {
        const why = deadReason(store, gone.name);
        throw new ConflictError(
          'EGJ_NOT_CANCELLABLE',
          `${store.layout.dir('dead')}/${gone.name}: the job is already in dead/${why ? ` (${why.code}: ${why.reason})` : ''}; only queued or running jobs can be cancelled`,
        );
      }
      const { state, dead, result } = await cancelJob(store, key, o.reason);
      const ended = state === 'running' ? await endIntentOf(store, key) : undefined;
      const note =
        state === 'running'
          ? ended
            ? `; batch run ${ended.run} had not been sent: it ended, and its other ${ended.requeued.length} job(s) are back in the queue`
            : '; its worker stands down at its next heartbeat and its generator is killed'
          : '';
      return {
        key,
        line: `${key.slice(0, 12)} cancelled (was ${state}): ${[dead, ...result].map((n) => `dead/${n}`).join(', ')}${note}`,
        json: {
          ok: true,
          key,
          was: state,
          already: false,
          dead: [dead, ...result],
          ...(ended ? { batch_ended: { run: ended.run, requeued: ended.requeued } } : {}),
        },
      };
    },
    o.run,
  );
}

/** End the unsent batch intent that held the cancelled `key`, if one did. */
async function endIntentOf(
  store: Store,
  key: string,
): Promise<{ run: string; requeued: string[] } | undefined> {
  const listed = intentHolding(openRecords(store), key);
  if (listed === undefined) return undefined;
  const lock = await lockRun(store, listed.run);
  try {
    const rec = readRecord(store, listed.run);
    if (rec?.state !== 'intent') return undefined; // sent (or ended) meanwhile: the batch's jobs are its own
    const reason = `batch run ${rec.run} ended by genjob cancel ${key.slice(0, 12)} before anything was sent`;
    const back = await endIntent(store, rec, { code: 'EGJ_BATCH_UNANSWERED', reason }, key);
    return { run: rec.run, requeued: back.map((b) => b.key) };
  } finally {
    await lock.release();
  }
}
