// genjob gc [--older-than DURATION] [--dry-run]: prune the bulky material of jobs finished longer ago
// than the window (default 30d), leaving a tombstone per key (store/gc.ts). Holds the apply lock, so
// no apply publishes objects or records meanwhile; queued, running and received jobs are never touched.
import { withApplyLock } from '../apply/apply-lock.js';
import { formatBytes } from '../cli/format-bytes.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { DEFAULT_RETENTION, parseDuration } from '../core/duration.js';
import { executeGc, type GcPlan, planGc } from '../store/gc.js';
import { journal } from '../store/journal.js';

function summary(plan: GcPlan): string[] {
  const count = (kind: string) =>
    plan.keys
      .flatMap((k) => k.items)
      .concat(plan.other)
      .filter((i) => i.kind === kind).length;
  const kinds = [
    'out',
    'receipt',
    'promotion',
    'object',
    'applied-record',
    'dead',
    'shadow',
    'staging',
    'tmp',
  ]
    .map((k) => [k, count(k)] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k}`);
  return [
    `${plan.keys.length} key(s) finished before ${plan.cutoff}, ${formatBytes(plan.bytes)}${kinds.length ? ` (${kinds.join(', ')})` : ''}`,
    ...plan.keys.map((k) => `  ${k.key.slice(0, 12)} ${k.state}: ${k.items.length} item(s)`),
  ];
}

export async function gc(
  o: CommonOptions & { olderThan?: string; dryRun?: boolean },
): Promise<CommandResult> {
  const store = openStore(o);
  const windowMs = parseDuration(o.olderThan ?? DEFAULT_RETENTION);
  if (o.dryRun) {
    const plan = planGc(store, windowMs);
    return {
      human: ['would prune:', ...summary(plan)].join('\n'),
      json: { ok: true, dry_run: true, ...plan },
    };
  }
  const plan = await withApplyLock(store, {}, () => {
    const p = planGc(store, windowMs);
    executeGc(store, p);
    return p;
  });
  journal(store, { event: 'gc', keys: plan.keys.length, bytes: plan.bytes, cutoff: plan.cutoff });
  return { human: ['pruned:', ...summary(plan)].join('\n'), json: { ok: true, dry_run: false, ...plan } };
}
