// genjob gc [--older-than DURATION] [--dry-run]: prune the bulky material of jobs finished longer ago
// than the window (default 30d), leaving a tombstone per key (store/gc.ts). Holds the apply lock, so
// no apply publishes objects or records meanwhile; queued, running and received jobs are never touched.
// A batch intent older than the window that was never sent to the provider (nobody holds its run's
// lock) is ended too: its jobs go back to the queue (worker/batch-end.ts), since nothing can answer them.
import { withApplyLock } from '../apply/apply-lock.js';
import { formatBytes } from '../cli/format-bytes.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { DEFAULT_RETENTION, parseDuration } from '../core/duration.js';
import { ConflictError } from '../core/errors.js';
import { openRecords, readRecord } from '../store/batch-outbox.js';
import { assertGcDirs, executeGc, type GcPlan, planGc } from '../store/gc.js';
import { journal } from '../store/journal.js';
import type { HeldLock } from '../store/key-lock.js';
import type { Store } from '../store/store.js';
import { endIntent } from '../worker/batch-end.js';
import { lockRun } from '../worker/batch-send.js';

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

interface EndedIntent {
  run: string;
  created_at: string;
  /** The jobs put back in the queue (with --dry-run: those that would be). */
  keys: string[];
}

/** End (with `dry`: list) the unsent batch intents created before `cutoff` that no process is sending. */
async function endUnsentIntents(store: Store, cutoff: number, dry: boolean): Promise<EndedIntent[]> {
  const ended: EndedIntent[] = [];
  for (const listed of openRecords(store)) {
    if (listed.state !== 'intent' || !(Date.parse(listed.created_at) < cutoff)) continue;
    if (dry) {
      ended.push({ run: listed.run, created_at: listed.created_at, keys: listed.jobs.map((j) => j.key) });
      continue;
    }
    let lock: HeldLock;
    try {
      lock = await lockRun(store, listed.run);
    } catch (err) {
      if (err instanceof ConflictError) continue; // being sent right now
      throw err;
    }
    try {
      const rec = readRecord(store, listed.run);
      if (rec?.state !== 'intent') continue;
      const reason = `batch run ${rec.run} ended by genjob gc: never sent to the provider since ${rec.created_at}`;
      const back = await endIntent(store, rec, { code: 'EGJ_BATCH_UNANSWERED', reason });
      ended.push({ run: rec.run, created_at: rec.created_at, keys: back.map((b) => b.key) });
    } finally {
      await lock.release();
    }
  }
  return ended;
}

function intentLines(intents: readonly EndedIntent[], dry: boolean): string[] {
  return intents.map(
    (i) =>
      `batch run ${i.run} (never sent, since ${i.created_at}): ${dry ? 'would end' : 'ended'}, ${i.keys.length} job(s) back in the queue`,
  );
}

export async function gc(
  o: CommonOptions & { olderThan?: string; dryRun?: boolean },
): Promise<CommandResult> {
  const store = openStore(o);
  const windowMs = parseDuration(o.olderThan ?? DEFAULT_RETENTION);
  // before anything is planned or ended: a dry run says what the real one would refuse
  assertGcDirs(store);
  const intents = await endUnsentIntents(store, Date.now() - windowMs, o.dryRun === true);
  if (o.dryRun) {
    const plan = planGc(store, windowMs);
    return {
      human: ['would prune:', ...summary(plan), ...intentLines(intents, true)].join('\n'),
      json: { ok: true, dry_run: true, ...plan, batch_intents: intents },
    };
  }
  const plan = await withApplyLock(store, {}, () => {
    const p = planGc(store, windowMs);
    executeGc(store, p);
    return p;
  });
  journal(store, { event: 'gc', keys: plan.keys.length, bytes: plan.bytes, cutoff: plan.cutoff });
  return {
    human: ['pruned:', ...summary(plan), ...intentLines(intents, false)].join('\n'),
    json: { ok: true, dry_run: false, ...plan, batch_intents: intents },
  };
}
