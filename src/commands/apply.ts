// genjob apply [KEY | --all] [--dry-run [--diff]]: finish any apply a crash interrupted, then for
// each job verify again (never trust an earlier verify) and write it. An applied key is a no-op
// that says so. Stops at the first failure; what failed wrote nothing.
import { applyJob, recoverInterruptedApplies } from '../apply/apply-job.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { exists, sweepStaleTemps } from '../store/durable.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { verifyKey } from '../verify/verify-key.js';
import { selectKeys } from './verify.js';

export interface ApplyOptions extends CommonOptions {
  key?: string;
  all?: boolean;
  dryRun?: boolean;
  diff?: boolean;
  requireSignature?: boolean;
}

export async function apply(o: ApplyOptions): Promise<CommandResult> {
  const store = openStore(o);
  if (!o.dryRun) sweepStaleTemps(store); // .gen/tmp temps of applies (and workers) that died mid-publish
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
    results.push({ key, ...outcome });
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
  }
  if (keys.length === 0 && recovered.length === 0) lines.push('nothing to apply (no received jobs)');
  return { human: lines.join('\n'), json: { ok: true, recovered, results } };
}
