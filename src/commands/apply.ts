// genjob apply [KEY | --all] [--dry-run [--diff]]: finish any apply a crash interrupted, then for
// each job verify again (never trust an earlier verify) and write it. An applied key is a no-op
// that says so. Stops at the first failure; what failed wrote nothing.
import { applyJob, recoverInterruptedApplies } from '../apply/apply-job.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { exists } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { requireSandbox } from '../verify/require-sandbox.js';
import { type Verified, verifyKey } from '../verify/verify-key.js';
import { selectKeys } from './verify.js';

export interface ApplyOptions extends CommonOptions {
  key?: string;
  all?: boolean;
  dryRun?: boolean;
  diff?: boolean;
  requireSignature?: boolean;
  requireSandbox?: boolean;
  /** One git commit per applied job holding exactly its outputs (src/git/commit-job.ts). */
  commit?: boolean;
}

/** apply --commit: one commit holding exactly this job's verified outputs (src/git/commit-job.ts). */
async function commitVerified(store: Store, v: Verified): Promise<{ commit?: string; line: string }> {
  const { commitJob } = await import('../git/commit-job.js');
  const c = await commitJob(store, {
    key: v.job.key,
    instruction: v.job.instruction,
    receiptSha256: v.receiptSha256,
    signer: v.signer,
    outputs: v.receipt.outputs,
  });
  return c.status === 'committed'
    ? { commit: c.commit, line: `  committed ${c.commit.slice(0, 12)}` }
    : { line: '  nothing to commit: HEAD already holds these bytes' };
}

export async function apply(o: ApplyOptions): Promise<CommandResult> {
  if (o.commit && o.dryRun)
    throw new UsageError('EGJ_USAGE', '--commit writes a commit; it cannot go with --dry-run');
  const store = openStore(o);
  const recovered = o.dryRun ? [] : await recoverInterruptedApplies(store);
  const keys = selectKeys(store, o, 'received');
  const policy = loadTrustPolicy(store.root, { requireSignature: o.requireSignature === true });
  const results: Array<Record<string, unknown>> = [];
  const lines: string[] = recovered.map((k) => `${k.slice(0, 12)} finished an apply interrupted by a crash`);
  for (const key of keys) {
    if (exists(store, store.layout.jobFile('applied', key))) {
      results.push({ key, status: 'already-applied' });
      lines.push(`${key.slice(0, 12)} already applied`);
      continue;
    }
    const v = await verifyKey(store, key, policy);
    if (o.requireSandbox) requireSandbox(v.receipt, store.layout.receipt(key));
    const outcome = await applyJob(
      {
        store,
        job: v.job,
        jobDigest: v.jobDigest,
        receiptSha256: v.receiptSha256,
        epoch: v.receipt.epoch,
        outputs: v.receipt.outputs,
      },
      { dryRun: o.dryRun === true, diff: o.diff === true },
    );
    const committed = o.commit && outcome.status !== 'dry-run' ? await commitVerified(store, v) : undefined;
    results.push({ key, ...outcome, ...(committed ? { commit: committed.commit ?? null } : {}) });
    const files = outcome.writes.map((w) => `  ${w.before === null ? 'create' : 'update'} ${w.path}`);
    if (outcome.status === 'dry-run') {
      lines.push(`${key.slice(0, 12)} would write ${outcome.writes.length} file(s):`, ...files);
      if (outcome.diff) lines.push(outcome.diff);
    } else if (outcome.status === 'already-applied') {
      lines.push(`${key.slice(0, 12)} already applied`);
    } else {
      lines.push(
        `${key.slice(0, 12)} applied ${outcome.writes.length} file(s)${outcome.recovered ? ' (finished after a crash)' : ''}:`,
        ...files,
      );
    }
    if (committed) lines.push(committed.line);
  }
  if (keys.length === 0 && recovered.length === 0) lines.push('nothing to apply (no received jobs)');
  return { human: lines.join('\n'), json: { ok: true, recovered, results } };
}
