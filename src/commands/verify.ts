// genjob verify [KEY | --all]: check receipts and bytes (the verify rules in docs/exit-codes.md); exit 3
// naming the rule broken. Writes nothing. With --all, every received job is checked and every
// failing one is reported (one stderr line each); the exit code is the worst seen.

import { type Failure, failureLines, failureOf, worstExit } from '../cli/failures.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore } from '../cli/root.js';
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
  /** With --commits: checkers each generated commit needs a current pass record of (src/check/commit-check.ts). */
  requireCheck?: string[];
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
  if (o.requireCheck && o.commits === undefined)
    throw new UsageError('EGJ_USAGE', '--require-check goes with --commits RANGE (apply takes it too)');
  if (o.commits !== undefined)
    return (await import('./verify-commits.js')).verifyCommits({ ...o, commits: o.commits });
  const store = lookStore(o);
  const keys = selectKeys(store, o, 'received');
  const policy = loadTrustPolicy(store.root, { requireSignature: o.requireSignature === true });
  const verified = [];
  const failures: Failure[] = [];
  const lines: string[] = [];
  for (const key of keys) {
    try {
      const v = await verifyKey(store, key, policy);
      if (o.requireSandbox) requireSandbox(v.receipt, store.layout.receipt(key));
      verified.push({
        key,
        outputs: v.receipt.outputs.length,
        signer: v.signer,
        epoch: v.receipt.epoch,
        state: v.state,
      });
      lines.push(
        `${key.slice(0, 12)} ok: ${v.receipt.outputs.length} output(s), epoch ${v.receipt.epoch}${v.signer ? `, signed by ${v.signer}` : ''}`,
      );
    } catch (err) {
      if (!o.all) throw err; // one key: the error alone says it all
      const f = failureOf(key, err);
      failures.push(f);
      lines.push(`${key.slice(0, 12)} FAILED: ${f.code}`);
    }
  }
  if (keys.length === 0) lines.push('nothing to verify (no received jobs)');
  if (failures.length > 0) lines.push(`${failures.length} of ${keys.length} job(s) failed verification`);
  return {
    human: lines.join('\n'),
    ...(failures.length > 0
      ? { exitCode: worstExit(failures.map((f) => f.exitCode)), stderr: failureLines(failures) }
      : {}),
    json: {
      ok: failures.length === 0,
      verified,
      failed: failures.map(({ key, code, message }) => ({ key, code, message })),
    },
  };
}
