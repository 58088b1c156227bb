// genjob verify [KEY | --all]: check receipts and bytes (DESIGN.md "Verify"); exit 3 naming the
// first rule broken. Writes nothing. With --all, every received job is checked.

import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { keysIn, resolveKey } from '../store/job-states.js';
import type { Store } from '../store/store.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { requireSandbox } from '../verify/require-sandbox.js';
import { verifyKey } from '../verify/verify-key.js';

export interface VerifyOptions extends CommonOptions {
  key?: string;
  all?: boolean;
  requireSignature?: boolean;
  requireSandbox?: boolean;
  /** The merge gate: check the generated commits of this range (src/commands/verify-commits.ts). */
  commits?: string;
  requireGenjob?: string[];
}

/** The keys a verify/apply invocation names: one key (or prefix), or --all of a state. */
export function selectKeys(store: Store, o: { key?: string; all?: boolean }, allState: 'received'): string[] {
  if (o.all && o.key) throw new UsageError('EGJ_USAGE', 'give a key or --all, not both');
  if (o.all) return keysIn(store, allState);
  if (!o.key)
    throw new UsageError('EGJ_USAGE', 'name a key (or a unique prefix of 4+ characters), or pass --all');
  return [resolveKey(store, o.key)];
}

export async function verify(o: VerifyOptions): Promise<CommandResult> {
  if (o.requireGenjob && o.commits === undefined)
    throw new UsageError('EGJ_USAGE', '--require-genjob goes with --commits RANGE');
  if (o.commits !== undefined)
    return (await import('./verify-commits.js')).verifyCommits({ ...o, commits: o.commits });
  const store = openStore(o);
  const keys = selectKeys(store, o, 'received');
  const policy = loadTrustPolicy(store.root, { requireSignature: o.requireSignature === true });
  const verified = [];
  for (const key of keys) {
    const v = await verifyKey(store, key, policy);
    if (o.requireSandbox) requireSandbox(v.receipt, store.layout.receipt(key));
    verified.push({
      key,
      outputs: v.receipt.outputs.length,
      signer: v.signer,
      epoch: v.receipt.epoch,
      state: v.state,
    });
  }
  const human =
    verified.length === 0
      ? 'nothing to verify (no received jobs)'
      : verified
          .map(
            (v) =>
              `${v.key.slice(0, 12)} ok: ${v.outputs} output(s), epoch ${v.epoch}${v.signer ? `, signed by ${v.signer}` : ''}`,
          )
          .join('\n');
  return { human, json: { ok: true, verified } };
}
