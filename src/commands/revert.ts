// genjob revert KEY: put back the bytes an applied job replaced, from objects/.
// Refused (exit 4, nothing written) if any of its files changed after the apply. The job is then in
// reverted/; reverting it again is a no-op that says so, and `apply KEY` writes it again.
import { revertApplied } from '../apply/revert.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { resolveKey } from '../store/job-states.js';

export async function revert(o: CommonOptions & { key: string }): Promise<CommandResult> {
  const store = openStore(o);
  const key = resolveKey(store, o.key);
  const { reverted, already } = await revertApplied(store, key);
  const lines = reverted.map((w) => `  ${w.before === null ? 'removed' : 'restored'} ${w.path}`);
  const head = already
    ? `${key.slice(0, 12)} already reverted (genjob apply ${key.slice(0, 12)} writes it again)`
    : `${key.slice(0, 12)} reverted ${reverted.length} file(s)${lines.length ? ':' : ''}`;
  return {
    human: [head, ...lines].join('\n'),
    json: { ok: true, key, status: already ? 'already-reverted' : 'reverted', reverted },
  };
}
