// End a batch intent that never reached the provider: a record still in state `intent` was never
// uploaded, so no batch can exist for it and none of its jobs can be answered. Its record.json goes
// first (unlinked, the run directory fsynced), then each job its attempt still holds goes back to the
// queue without spending the attempt, then the run directory. In that order a crash in between leaves
// jobs in running/ whose leases nothing renews — reaped like a dead worker's — and never an intent that
// a later --batch-poll could still send after its jobs were worked elsewhere. The caller holds the run's
// lock (batch-send.ts lockRun).
import { type BatchRecord, batchesDir, recordPath, runDir } from '../store/batch-outbox.js';
import { fsyncDir } from '../store/durable.js';
import { journal } from '../store/journal.js';
import { readLease } from '../store/lease.js';
import { assertRealDirs } from '../store/real-dirs.js';
import type { Store } from '../store/store.js';
import { requeue } from './release-job.js';
import type { JobOutcome } from './work-one.js';

/** Why the intent ended, journalled and given to each job as its requeue reason; `code` its journal code. */
export interface EndWhy {
  code: string;
  reason: string;
}

/** End `rec` (state `intent`, under its run lock); the outcome of each job put back (`except` is left alone). */
export async function endIntent(
  store: Store,
  rec: BatchRecord,
  why: EndWhy,
  except?: string,
): Promise<JobOutcome[]> {
  if (rec.state !== 'intent') throw new Error(`batch run ${rec.run} is ${rec.state}, not an unsent intent`); // a bug
  // the run is listed, so a branch can name it: an intent it committed behind a link is not removed there
  assertRealDirs(store, [runDir(store, rec.run)], 'genjob');
  store.fs.unlinkSync(recordPath(store, rec.run));
  fsyncDir(store, runDir(store, rec.run));
  journal(store, {
    event: 'batch-ended',
    run: rec.run,
    code: why.code,
    reason: why.reason,
    keys: rec.jobs.map((j) => j.key),
  });
  const outcomes: JobOutcome[] = [];
  for (const j of rec.jobs) {
    if (j.key === except) continue;
    // only a job its attempt still holds is the intent's to give back (and to mark unspent)
    if (readLease(store, j.key)?.epoch !== j.epoch) continue;
    const o = await requeue(store, j.key, j.epoch, why.reason, why.code, {
      spent: false,
      destination: `batch ${rec.run}`,
    });
    // a job no longer held by this attempt (cancelled, reaped, taken over) was not the intent's to give back
    if (o.outcome === 'requeued') outcomes.push(o);
  }
  store.fs.rmSync(runDir(store, rec.run), { recursive: true, force: true });
  fsyncDir(store, batchesDir(store));
  return outcomes;
}

/** The unsent intent holding `key`, if there is one. */
export function intentHolding(records: readonly BatchRecord[], key: string): BatchRecord | undefined {
  return records.find((r) => r.state === 'intent' && r.jobs.some((j) => j.key === key));
}
