// genjob cancel KEY: stop a queued or running job; it goes to dead/ with `cancelled` (see
// store/cancel-job.ts). A running job's worker stands down at its next heartbeat and has the host
// kill its generator (work-one.ts, serve-cancel.ts).
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { cancelJob } from '../store/cancel-job.js';
import { resolveKey } from '../store/job-states.js';

export async function cancel(o: CommonOptions & { key: string; reason?: string }): Promise<CommandResult> {
  const store = openStore(o);
  const key = resolveKey(store, o.key);
  const { state, dead } = await cancelJob(store, key, o.reason);
  const note =
    state === 'running' ? '; its worker stands down at its next heartbeat and its generator is killed' : '';
  return {
    human: `${key.slice(0, 12)} cancelled (was ${state}): dead/${dead}${note}`,
    json: { ok: true, key, was: state, dead: [dead] },
  };
}
