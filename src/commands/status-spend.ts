// Spend by mode for `genjob status`: the tokens of received and applied jobs' receipts, split by how
// they were generated (a receipt naming a `batch` is batch, any other interactive), and, when
// GENJOB_PRICE_IN / GENJOB_PRICE_OUT (per million tokens) are set, what they cost and what the same
// tokens would have cost interactively. Batch tokens are priced at GENJOB_BATCH_PRICE_FACTOR (default
// 0.5, the providers' batch discount) times the interactive price. A model judge's tokens (check records,
// each counting the requests it made) are mode `judge`, priced as interactive. Display only: JSON.parse,
// no schema.
import { join } from 'node:path';
import { checksDir } from '../check/record-paths.js';
import { splitEnvelope } from '../core/receipt-peek.js';
import { openRecords } from '../store/batch-outbox.js';
import { readdirOrEmpty, readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';

export interface ModeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  requests: number;
}

export interface Spend {
  interactive: ModeUsage;
  batch: ModeUsage;
  /** What model judges spent checking these jobs (their check records). */
  judge: ModeUsage;
  /** Present when both prices are set. */
  cost: {
    currency_per_million: { in: number; out: number };
    batch_factor: number;
    total: number;
    interactive_equivalent: number;
    saved: number;
  } | null;
}

export const DEFAULT_BATCH_PRICE_FACTOR = 0.5;

const zero = (): ModeUsage => ({ prompt_tokens: 0, completion_tokens: 0, requests: 0 });

export function spendByMode(
  store: Store,
  keys: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Spend {
  const docs: Array<Record<string, unknown>> = [];
  for (const key of keys) {
    const bytes = readIfExists(store, store.layout.receipt(key));
    if (!bytes) continue;
    try {
      docs.push(splitEnvelope(JSON.parse(bytes.toString('utf8'))).payload);
    } catch {
      // an unreadable receipt reports no spend
    }
  }
  const judge = zero();
  for (const key of keys) addJudgeSpend(store, key, judge);
  return spendOfReceipts(docs, env, judge);
}

/**
 * The spend of receipt documents already read (their `usage` and `batch` fields) and of the judge
 * requests already counted, priced as above.
 */
export function spendOfReceipts(
  docs: Iterable<{ usage?: unknown; batch?: unknown }>,
  env: NodeJS.ProcessEnv = process.env,
  judge: ModeUsage = zero(),
): Spend {
  const spend: Spend = { interactive: zero(), batch: zero(), judge: { ...judge }, cost: null };
  for (const doc of docs) {
    const u = doc.usage as Partial<ModeUsage> | undefined;
    if (!u) continue;
    const into = typeof doc.batch === 'string' ? spend.batch : spend.interactive;
    for (const f of ['prompt_tokens', 'completion_tokens', 'requests'] as const) into[f] += Number(u[f]) || 0;
  }
  const price = (name: string) => {
    const v = Number(env[name]);
    return env[name] !== undefined && env[name] !== '' && Number.isFinite(v) && v >= 0 ? v : null;
  };
  const pin = price('GENJOB_PRICE_IN');
  const pout = price('GENJOB_PRICE_OUT');
  if (pin !== null && pout !== null) {
    const factor = price('GENJOB_BATCH_PRICE_FACTOR') ?? DEFAULT_BATCH_PRICE_FACTOR;
    const full = (u: ModeUsage) => (u.prompt_tokens * pin + u.completion_tokens * pout) / 1e6;
    const total = full(spend.interactive) + full(spend.judge) + full(spend.batch) * factor;
    const equivalent = full(spend.interactive) + full(spend.judge) + full(spend.batch);
    spend.cost = {
      currency_per_million: { in: pin, out: pout },
      batch_factor: factor,
      total: round(total),
      interactive_equivalent: round(equivalent),
      saved: round(equivalent - total),
    };
  }
  return spend;
}

/** Add the tokens every check record of `key` says its judge requests spent. */
function addJudgeSpend(store: Store, key: string, into: ModeUsage): void {
  for (const checker of readdirOrEmpty(store, checksDir(store, key))) {
    const dir = checksDir(store, key, checker);
    for (const name of readdirOrEmpty(store, dir)) {
      if (!name.endsWith('.json')) continue;
      let spent: Partial<ModeUsage> | undefined;
      try {
        const doc = splitEnvelope(
          JSON.parse(readIfExists(store, join(dir, name))?.toString('utf8') ?? 'null'),
        ).payload;
        spent = (doc as { predicate?: { genjob?: { judge?: { spent?: ModeUsage } } } }).predicate?.genjob
          ?.judge?.spent;
      } catch {
        continue;
      }
      if (spent)
        for (const f of ['prompt_tokens', 'completion_tokens', 'requests'] as const)
          into[f] += Number(spent[f]) || 0;
    }
  }
}

/** The human lines: tokens per mode, and the cost when prices are set. */
export function spendLines(s: Spend): string[] {
  const lines: string[] = [];
  const row = (name: string, u: ModeUsage) =>
    `tokens (${name}): ${u.prompt_tokens} prompt + ${u.completion_tokens} completion in ${u.requests} request(s)`;
  const any = (u: ModeUsage) => u.prompt_tokens + u.completion_tokens + u.requests > 0;
  if (any(s.batch)) {
    if (any(s.interactive)) lines.push(row('interactive', s.interactive));
    lines.push(row('batch', s.batch));
  }
  if (any(s.judge)) lines.push(row('judge', s.judge));
  if (s.cost)
    lines.push(
      `cost: ${s.cost.total.toFixed(4)} (interactively: ${s.cost.interactive_equivalent.toFixed(4)}; saved ${s.cost.saved.toFixed(4)}; batch at ${s.cost.batch_factor}× the price)`,
    );
  return lines;
}

/** Open batches as status shows them. */
export function openBatches(store: Store) {
  return openRecords(store).map((r) => ({
    run: r.run,
    batch_id: r.batch_id,
    state: r.state,
    provider_status: r.provider_status,
    jobs: r.jobs.length,
    created_at: r.created_at,
  }));
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
