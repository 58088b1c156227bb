// genjob promote --shadow NAME KEY: make shadow:NAME's answer for KEY the live one, through the live
// path: the job is queued live with the generator and sandbox flags the plane was run with pinned;
// `genjob work` then generates it in the live plane under a new epoch, and verify/apply treat the
// result like any other.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { requireUserSecret } from '../remote/cache-mac.js';
import { promoteShadow } from '../shadow/promote.js';
import { resolveKey } from '../store/job-states.js';
import { existingPlane } from './shadow-plane.js';

export async function promote(o: CommonOptions & { key: string; shadow: string }): Promise<CommandResult> {
  const store = openStore(o);
  const key = resolveKey(store, o.key);
  // a plane never worked (a typo) is bad usage, not a missing receipt
  existingPlane(store, o.shadow);
  // the pin is sealed under the user's secret: `work` follows no pin a branch committed
  const p = await promoteShadow(store, o.shadow, key, await requireUserSecret());
  const lines = [
    `${key.slice(0, 12)} promoted from ${p.plane}: queued live with generator ${JSON.stringify(p.generator)}${p.serve_args.length ? ` and sandbox flags ${p.serve_args.join(' ')}` : ''} (as the shadow run was${p.finished ? '; an interrupted promote finished' : ''})`,
    ...p.replaced.map((d) => `  the earlier live answer is kept in ${d}`),
    'run genjob work to generate it in the live plane, then verify and apply as usual',
  ];
  return { human: lines.join('\n'), json: { ok: true, ...p } };
}
