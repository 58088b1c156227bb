// genjob reap: move running jobs whose lease stopped beating back to the queue (journalled).

import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { reapStale } from '../store/reap.js';

export async function reap(o: CommonOptions & { leaseTtl: number }): Promise<CommandResult> {
  const store = openStore(o);
  const reaped = await reapStale(store, o.leaseTtl);
  const human =
    reaped.length === 0
      ? 'no stale leases'
      : reaped
          .map((r) => `${r.key.slice(0, 12)} reaped (epoch ${r.epoch}, silent for ${r.age_s} s) → queue`)
          .join('\n');
  return { human, json: { ok: true, reaped } };
}
