// genjob status: counts per state and one row per job (key prefix, state, epoch, age, receipt
// status, first line of the instruction), plus token totals from receipts. Display only: it
// reads files with JSON.parse and never loads the schema code, so it stays fast on big queues.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { peekEpoch, splitEnvelope } from '../core/receipt-peek.js';
import { currentEpoch, readAttempt } from '../store/attempts.js';
import { peekRecord, readdirOrEmpty } from '../store/durable.js';
import { FLOW, keysIn } from '../store/job-states.js';
import type { Store } from '../store/store.js';
import { openBatches, spendByMode, spendLines } from './status-spend.js';

interface Row {
  key: string;
  state: string;
  epoch: number;
  age_s: number;
  receipt: string | null;
  /** Where the newest attempt went (`--host`, `--launch` or local); null before any attempt. */
  host: string | null;
  instruction: string;
}

export function receiptSummary(bytes: Buffer | undefined): {
  status: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; requests: number } | null;
} {
  if (!bytes) return { status: null, usage: null };
  try {
    const doc = splitEnvelope(JSON.parse(bytes.toString('utf8'))).payload;
    return {
      status: String(doc.status),
      usage: (doc.usage as ReturnType<typeof receiptSummary>['usage']) ?? null,
    };
  } catch {
    return { status: 'unreadable', usage: null };
  }
}

function instructionOf(store: Store, state: string, key: string): string {
  const bytes = peekRecord(store, store.layout.jobFile(state as never, key));
  if (!bytes) return '';
  try {
    const doc = JSON.parse(bytes.toString('utf8'));
    return String(doc.instruction ?? doc.job?.instruction ?? '')
      .split('\n')[0]!
      .slice(0, 60);
  } catch {
    return '(unreadable job file)';
  }
}

function age(store: Store, state: string, key: string, now: number): number {
  try {
    return Math.round((now - store.fs.statSync(store.layout.jobFile(state as never, key)).ctimeMs) / 1000);
  } catch {
    return 0;
  }
}

function fmtAge(s: number): string {
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

export async function status(o: CommonOptions): Promise<CommandResult> {
  const store = openStore(o);
  const now = Date.now();
  const rows: Row[] = [];
  const counts: Record<string, number> = {};
  const seen = new Set<string>();
  for (const state of [...FLOW].reverse()) {
    const keys = keysIn(store, state).filter((k) => !seen.has(k)); // applied/ wins over a crash leftover
    counts[state] = keys.length;
    for (const key of keys) {
      seen.add(key);
      const receiptBytes = peekRecord(store, store.layout.receipt(key));
      const newest = currentEpoch(store, key);
      const epoch = receiptBytes ? peekEpoch(receiptBytes) || newest : newest;
      rows.push({
        key,
        state,
        epoch,
        host: epoch > 0 ? (readAttempt(store, key, epoch)?.destination ?? null) : null,
        age_s: age(store, state, key, now),
        receipt: receiptSummary(receiptBytes).status,
        instruction: instructionOf(store, state, key),
      });
    }
  }
  counts.dead = readdirOrEmpty(store, store.layout.dir('dead')).filter(
    (n) => !n.endsWith('.why.json'),
  ).length;
  const usage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
  for (const key of keysIn(store, 'received').concat(keysIn(store, 'applied'))) {
    const u = receiptSummary(peekRecord(store, store.layout.receipt(key))).usage;
    if (u)
      for (const f of ['prompt_tokens', 'completion_tokens', 'requests'] as const)
        usage[f] += Number(u[f]) || 0;
  }
  // spend by mode (interactive / batch) and open provider batches
  const spend = spendByMode(store, keysIn(store, 'received').concat(keysIn(store, 'applied')));
  const batches = openBatches(store);
  const order = ['queue', 'running', 'received', 'applied'];
  rows.sort((a, b) => order.indexOf(a.state) - order.indexOf(b.state) || a.key.localeCompare(b.key));
  const lines = [
    `queue ${counts.queue}  running ${counts.running}  received ${counts.received}  applied ${counts.applied}  dead ${counts.dead}`,
  ];
  if (usage.requests + usage.prompt_tokens + usage.completion_tokens > 0) {
    lines.push(
      `tokens: ${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion in ${usage.requests} request(s)`,
    );
  }
  lines.push(...spendLines(spend));
  for (const b of batches)
    lines.push(
      `batch ${b.batch_id ?? '(not yet created)'}: ${b.jobs} job(s), ${b.provider_status ?? b.state} (run ${b.run})`,
    );
  if (rows.length > 0) {
    lines.push('', 'KEY           STATE     EPOCH  AGE   RECEIPT   HOST          INSTRUCTION');
    for (const r of rows) {
      lines.push(
        `${r.key.slice(0, 12)}  ${r.state.padEnd(8)}  ${String(r.epoch).padStart(5)}  ${fmtAge(r.age_s).padEnd(4)}  ${(r.receipt ?? '-').padEnd(8)}  ${(r.host ?? '-').slice(0, 12).padEnd(12)}  ${r.instruction}`,
      );
    }
  }
  return { human: lines.join('\n'), json: { ok: true, counts, usage, spend, batches, jobs: rows } };
}
