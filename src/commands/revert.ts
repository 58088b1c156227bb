// genjob revert KEY: put back the bytes an applied job replaced, from objects/.
// Refused (exit 4, nothing written) if any of its files changed after the apply.
import { revertApplied } from '../apply/revert.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { sweepStaleTemps } from '../store/durable.js';
import { resolveKey } from '../store/job-states.js';

export async function revert(o: CommonOptions & { key: string }): Promise<CommandResult> {
  const store = openStore(o);
  sweepStaleTemps(store, undefined, undefined, [store.layout.tmp]); // temps of dead writers of its kind
  const key = resolveKey(store, o.key);
  const { reverted } = await revertApplied(store, key);
  const lines = reverted.map((w) => `  ${w.before === null ? 'removed' : 'restored'} ${w.path}`);
  return {
    human: [`${key.slice(0, 12)} reverted ${reverted.length} file(s):`, ...lines].join('\n'),
    json: { ok: true, key, reverted },
  };
}
