// genjob status: counts per state (received broken into ok / aborted / rejected) and the most recent
// jobs, newest first, one row each (key prefix, state, epoch, age, receipt status, the host of the last attempt, a
// stale marker, the instruction fitted to the terminal). Counting is one directory listing per state and
// choosing rows a stat per job (up to RANK_BUDGET jobs in a state; a deeper state's rows are those the
// journal's tail names): only the rows shown are parsed. What
// .gen/ weighs and what gc would free walks all of .gen/, so it is computed only with --disk. Never
// creates .gen/.
import type { CheckState } from '../check/check-state.js';
import { stateLabel, stateMatches } from '../check/check-state.js';
import type { ColorMode } from '../cli/colour.js';
import { painter, useColour } from '../cli/colour.js';
import { formatBytes } from '../cli/format-bytes.js';
import { configForLooking } from '../cli/look-config.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore } from '../cli/root.js';
import { DEFAULT_RETENTION, parseDuration } from '../core/duration.js';
import { UsageError } from '../core/errors.js';
import { peekEpoch, splitEnvelope } from '../core/receipt-peek.js';
import { terminalText } from '../core/terminal-text.js';
import { currentEpoch, readAttempt } from '../store/attempts.js';
import { deadJobs, deadReason } from '../store/dead-jobs.js';
import { exists, peekRecord, readdirOrEmpty } from '../store/durable.js';
import { planGc, sizeOf } from '../store/gc.js';
import { FLOW, jobKeysIn, PRECEDENCE } from '../store/job-states.js';
import { recentKeyTimes } from '../store/journal-read.js';
import type { JobState } from '../store/layout.js';
import { inputsChanged } from '../store/stale-inputs.js';
import type { Store } from '../store/store.js';
import { openBatches, spendByMode, spendLines } from './status-spend.js';

export const DEFAULT_ROWS = 50;
/**
 * Ranking rows by recency takes a stat per job file, which on 100,000 files costs twice the listing
 * itself: the default table ranks a state only up to this many jobs. A deeper state is counted, its
 * rows are the jobs of the journal's recent events, and it is ranked in full when asked for by name
 * (--state) or with --all.
 */
export const RANK_BUDGET = 10_000;
/** The HOST column's widest: longer destinations (a `launch:` command) are cut with an ellipsis. */
const HOST_WIDTH = 24;
const ROW_STATES = [...FLOW, 'dead'] as const;
type RowState = (typeof ROW_STATES)[number];

export interface StatusOptions extends CommonOptions {
  state?: string;
  limit?: number;
  all?: boolean;
  color?: ColorMode;
  /** Also walk .gen/ for its size and what `genjob gc` would free (a stat per file: slow on a deep .gen/). */
  disk?: boolean;
  /** `NAME=VALUE` filters on check states (a verdict, missing, stale or current); all must match. */
  check?: string[];
  /** Only the jobs of this run (its keys now: successors of reminted ones). */
  run?: string;
}

const CHECK_VALUES = ['pass', 'fail', 'flaky', 'uncertain', 'error', 'missing', 'stale', 'current'];

function checkFilters(specs: readonly string[] | undefined): Array<{ name: string; value: string }> {
  return (specs ?? []).map((spec) => {
    const m = /^([^=]+)=(.+)$/.exec(spec);
    if (!m || !CHECK_VALUES.includes(m[2]!))
      throw new UsageError(
        'EGJ_USAGE',
        `--check ${JSON.stringify(spec)}: give NAME=VALUE, VALUE one of ${CHECK_VALUES.join(', ')}`,
      );
    return { name: m[1]!, value: m[2]! };
  });
}

/** Each job's check states, for the declared checkers and those --check names (undefined: none at all). */
async function checkView(root: string, filters: ReadonlyArray<{ name: string }>) {
  const { loadCheckers } = await import('../check/checker.js');
  if (filters.length === 0 && loadCheckers(root).length === 0) return undefined;
  const { checkContext, stateOf } = await import('../check/check-state.js');
  const ctx = await checkContext(root);
  const names = [...new Set([...ctx.checkers.keys(), ...filters.map((f) => f.name)])];
  const memo = new Map<string, CheckState>();
  const state = (key: string, name: string): CheckState => {
    const id = `${key}/${name}`;
    if (!memo.has(id)) {
      const { record: _record, ignored: _ignored, ...s } = stateOf(ctx, key, name);
      memo.set(id, s);
    }
    return memo.get(id)!;
  };
  return { names, state };
}

interface Row {
  key: string;
  state: RowState;
  epoch: number;
  age_s: number;
  receipt: string | null;
  stale: boolean;
  instruction: string;
  /** Where the current epoch's attempt went (`local`, `user@host:port`, `launch:CMD`); null before one. */
  host: string | null;
  reason?: string;
  /** Each checker's state, when the repository declares checkers. */
  checks?: CheckState[];
}

export function receiptSummary(bytes: Buffer | undefined): {
  status: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; requests: number } | null;
  /** The first line of its reason: for a failed generator, the line of its stderr that says what failed. */
  reason: string | null;
} {
  if (!bytes) return { status: null, usage: null, reason: null };
  try {
    const doc = splitEnvelope(JSON.parse(bytes.toString('utf8'))).payload;
    return {
      status: String(doc.status),
      usage: (doc.usage as ReturnType<typeof receiptSummary>['usage']) ?? null,
      reason: typeof doc.reason === 'string' ? doc.reason.split('\n')[0]! : null,
    };
  } catch {
    return { status: 'unreadable', usage: null, reason: null };
  }
}

function jobDoc(
  bytes: Buffer | undefined,
): { instruction: string; inputs: [] | Array<{ path: string; sha256: string | null }> } | null {
  if (!bytes) return null;
  try {
    const doc = JSON.parse(bytes.toString('utf8'));
    const job = typeof doc.job === 'object' && doc.job !== null ? doc.job : doc;
    return {
      instruction: String(job.instruction ?? ''),
      // a changed read makes the job as stale as a changed input (apply's rule 6)
      inputs: [
        ...(Array.isArray(job.inputs) ? job.inputs : []),
        ...(Array.isArray(job.reads) ? job.reads : []),
      ],
    };
  } catch {
    return null;
  }
}

function ctimeMs(store: Store, file: string): number {
  try {
    return store.fs.statSync(file).ctimeMs;
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

/** The width the instruction column may take: the terminal's, else $COLUMNS, else 100. */
function terminalWidth(): number {
  return process.stdout.columns || Number(process.env.COLUMNS) || 100;
}

export async function status(o: StatusOptions): Promise<CommandResult> {
  if (o.state !== undefined && !(ROW_STATES as readonly string[]).includes(o.state))
    throw new UsageError('EGJ_USAGE', `--state ${o.state}: one of ${ROW_STATES.join(', ')}`);
  const filters = checkFilters(o.check);
  const store = lookStore(o);
  // --check needs the checkers the file declares: without filters, an unreadable file only warns
  const configWarning = filters.length > 0 ? '' : await configForLooking(store, 'status');
  // a filter on a checker the config does not declare would match nothing, silently
  if (filters.length > 0)
    await (await import('../check/declared-checkers.js')).refuseUndeclared(
      store,
      '--check',
      filters.map((f) => f.name),
    );
  const now = Date.now();
  // --run: only the run's jobs are counted and listed
  const run = o.run === undefined ? undefined : (await import('../run/run-keys.js')).runKeys(store, o.run);
  const inRun = run && new Set(run.current);
  // 1. counts: one listing per state directory; a key in two (a crash leftover) counts where it wins
  const listed = new Map<RowState, string[]>();
  const seen = new Set<string>();
  const notJobs: string[] = [];
  for (const [i, state] of PRECEDENCE.entries()) {
    const keys = jobKeysIn(store, state, notJobs).filter((k) => !seen.has(k) && (inRun?.has(k) ?? true));
    listed.set(state, keys);
    // the last state (queue, the deep one) is never looked up again: no set of its keys
    if (i < PRECEDENCE.length - 1) for (const k of keys) seen.add(k);
  }
  const deadNames = readdirOrEmpty(store, store.layout.dir('dead'));
  // a key with a job file in dead/ that lives again (retried after a cancel, minted again) is not dead;
  // queue/ is never made into a set (it can be deep): one existence check per dead key instead
  const dead = deadJobs(store, deadNames).filter(
    (d) =>
      !seen.has(d.key) && (inRun?.has(d.key) ?? true) && !exists(store, store.layout.jobFile('queue', d.key)),
  );
  // dead/ also keeps what was refused or set aside for jobs that live on (a retried attempt's receipt and
  // outputs, a late or superseded receipt): not dead jobs, but say they are there
  const deadKeys = new Set(dead.map((d) => d.key));
  const kept = deadNames.filter(
    (n) => !n.endsWith('.why.json') && !deadKeys.has(n.slice(0, 64)) && (inRun?.has(n.slice(0, 64)) ?? true),
  ).length;
  const counts: Record<string, number> = {};
  for (const state of FLOW) counts[state] = listed.get(state)!.length;
  counts.dead = dead.length;
  // 2. received by receipt status, and the tokens receipts report (receipts only, never job files)
  const received: Record<string, number> = { ok: 0, aborted: 0, rejected: 0 };
  const usage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
  const receiptOf = new Map<string, Buffer | undefined>();
  for (const state of ['received', 'applied', 'reverted'] as const)
    for (const key of listed.get(state)!) {
      const bytes = peekRecord(store, store.layout.receipt(key));
      const summary = receiptSummary(bytes);
      if (state === 'received') {
        receiptOf.set(key, bytes);
        const s = summary.status ?? 'none';
        received[s] = (received[s] ?? 0) + 1;
      }
      if (summary.usage)
        for (const f of ['prompt_tokens', 'completion_tokens', 'requests'] as const)
          usage[f] += Number(summary.usage[f]) || 0;
    }
  // 3. rows: the most recent of the chosen state(s), by a stat each; only those are parsed
  const wanted = o.state === undefined ? ROW_STATES : [o.state as RowState];
  const rankAll = o.state !== undefined || o.all === true;
  let candidates: Array<{ key: string; state: RowState; at: number; deadName?: string }> = [];
  const unranked: Partial<Record<RowState, number>> = {};
  let recent: Map<string, number> | undefined;
  for (const state of wanted) {
    if (state === 'dead')
      for (const d of dead) candidates.push({ key: d.key, state, at: d.at, deadName: d.name });
    else if (!rankAll && listed.get(state)!.length > RANK_BUDGET) {
      // too deep to stat each job: its most recent rows are the ones the journal's tail names
      recent ??= recentKeyTimes(store);
      const inState = new Set(listed.get(state));
      let found = 0;
      for (const [key, at] of recent)
        if (inState.has(key)) {
          candidates.push({ key, state, at });
          found++;
        }
      unranked[state] = listed.get(state)!.length - found;
    } else
      for (const key of listed.get(state)!)
        candidates.push({ key, state, at: ctimeMs(store, store.layout.jobFile(state as JobState, key)) });
  }
  const checks = await checkView(store.root, filters);
  if (checks && filters.length > 0)
    candidates = candidates.filter((c) =>
      filters.every((f) => stateMatches(checks.state(c.key, f.name), f.value)),
    );
  // spend by mode (interactive / batch) and open provider batches
  const spend = spendByMode(store, listed.get('received')!.concat(listed.get('applied')!));
  const batches = openBatches(store);
  const limit = o.all ? Number.POSITIVE_INFINITY : (o.limit ?? DEFAULT_ROWS);
  const chosen = newest(candidates, limit);
  const rows: Row[] = chosen.map((c) => {
    const file = c.deadName
      ? `${store.layout.dir('dead')}/${c.deadName}`
      : store.layout.jobFile(c.state as JobState, c.key);
    const doc = jobDoc(peekRecord(store, file));
    const receiptBytes =
      receiptOf.get(c.key) ??
      (c.state === 'dead' || c.state === 'queue'
        ? undefined
        : peekRecord(store, store.layout.receipt(c.key)));
    const checkStale = c.state === 'queue' || c.state === 'received' || c.state === 'reverted';
    const why = c.deadName ? deadReason(store, c.deadName) : null;
    const summary = receiptSummary(receiptBytes);
    // a failed receipt's reason stands in for the instruction, as a dead job's does
    const failed = summary.status !== 'ok' && summary.reason ? summary.reason : null;
    const epoch = receiptBytes
      ? peekEpoch(receiptBytes) || currentEpoch(store, c.key)
      : currentEpoch(store, c.key);
    return {
      key: c.key,
      state: c.state,
      epoch,
      age_s: Math.max(0, Math.round((now - c.at) / 1000)),
      receipt: summary.status,
      stale: checkStale && doc !== null && inputsChanged(store, doc.inputs),
      instruction: doc === null ? '(unreadable job file)' : doc.instruction.split('\n')[0]!,
      host: epoch > 0 ? (readAttempt(store, c.key, epoch)?.destination ?? null) : null,
      ...(why ? { reason: `${why.code}: ${why.reason}` } : failed ? { reason: failed } : {}),
      ...(checks ? { checks: checks.names.map((n) => checks.state(c.key, n)) } : {}),
    };
  });
  // rows stay as chosen: newest first (the time each job entered its state)

  const paint = painter(useColour(o.color));
  const stateColour = {
    queue: 'yellow',
    running: 'cyan',
    received: 'blue',
    applied: 'green',
    reverted: 'magenta',
    dead: 'red',
  } as const;
  const receiptColour = (r: string) => (r === 'ok' ? 'green' : 'red');
  const lines = [
    ...(run
      ? [
          `run ${run.ref.id}: ${run.intended.length} job(s) (.gen/runs/${run.ref.id}.json)${run.current.some((k, i) => k !== run.intended[i]) ? '; reminted ones shown as their successors' : ''}`,
        ]
      : []),
    `queue ${counts.queue}  running ${counts.running}  received ${counts.received} (ok ${received.ok}, aborted ${received.aborted}, rejected ${received.rejected})  applied ${counts.applied}  reverted ${counts.reverted}  dead ${counts.dead}`,
  ];
  if (kept > 0)
    lines.push(
      `dead/ also keeps ${kept} item(s) of jobs that are not dead: receipts and outputs of retried or superseded attempts, refused material (ls ${store.layout.dir('dead')})`,
    );
  if (notJobs.length > 0)
    lines.push(
      `${notJobs.length} job file(s) not named by a key, so no job genjob minted, not counted: ${notJobs
        .slice(0, 5)
        .map((f) => terminalText(f))
        .join(
          ', ',
        )}${notJobs.length > 5 ? ` and ${notJobs.length - 5} more` : ''} (genjob work sets them aside in dead/)`,
    );
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
  // retention: how big .gen/ is, and what `genjob gc` (default window) would free
  const disk = o.disk ? retentionFacts(store) : undefined;
  if (disk)
    lines.push(
      `.gen/ ${formatBytes(disk.gen_bytes)}; genjob gc would free ${formatBytes(disk.gc_bytes)} (finished before ${disk.gc_cutoff.slice(0, 10)})`,
    );
  if (rows.length > 0) {
    const hostWidth = Math.min(HOST_WIDTH, Math.max(4, ...rows.map((r) => (r.host ?? '-').length)));
    // the CHECKS column, only where checkers are declared: `tests=pass lint=fail (stale: base)`
    const checkCell = (r: Row) => (r.checks ?? []).map((c) => `${c.checker}=${stateLabel(c)}`).join(' ');
    const checkWidth = checks ? Math.max(6, ...rows.map((r) => checkCell(r).length)) : 0;
    const checkHead = checks ? `${'CHECKS'.padEnd(checkWidth)}  ` : '';
    lines.push(
      '',
      `KEY           STATE     EPOCH  AGE   RECEIPT   ${'HOST'.padEnd(hostWidth)}  ${checkHead}INSTRUCTION`,
    );
    // the columns before the instruction
    const room = Math.max(10, terminalWidth() - 49 - hostWidth - (checks ? checkWidth + 2 : 0));
    for (const r of rows) {
      const host = terminalText(r.host ?? '-');
      const hostCell = host.length > hostWidth ? `${host.slice(0, hostWidth - 1)}…` : host.padEnd(hostWidth);
      // host- and user-chosen text is made terminal-safe here, so the colour codes around it survive
      const text = terminalText(r.reason ?? r.instruction);
      const marked = `${r.stale ? '(stale) ' : ''}${text}`;
      const fitted = marked.length > room ? `${marked.slice(0, room - 1)}…` : marked;
      lines.push(
        `${r.key.slice(0, 12)}  ${paint(stateColour[r.state], r.state.padEnd(8))}  ${String(r.epoch).padStart(5)}  ${fmtAge(r.age_s).padEnd(4)}  ${r.receipt ? paint(receiptColour(r.receipt), terminalText(r.receipt).padEnd(8)) : '-'.padEnd(8)}  ${hostCell}  ${checks ? `${checkCell(r).padEnd(checkWidth)}  ` : ''}${r.stale ? paint('yellow', fitted) : fitted}`,
      );
    }
  }
  const hidden = candidates.length - rows.length;
  if (hidden > 0)
    lines.push(`… ${hidden} older job(s) not shown (--all lists every one, --limit N more or fewer)`);
  for (const [state, n] of Object.entries(unranked))
    lines.push(
      `… ${n} ${state} job(s) not ranked: over ${RANK_BUDGET} in ${state}/, only those of the journal's recent events are (--state ${state} ranks them all, a stat each)`,
    );
  return {
    human: lines.join('\n'),
    terminalSafe: true,
    ...(configWarning ? { stderr: configWarning } : {}),
    json: {
      ok: true,
      ...(run ? { run: run.ref.id, keys: run.current } : {}),
      counts,
      dead_kept: kept,
      not_jobs: notJobs,
      received,
      usage,
      spend,
      batches,
      ...(disk ? { disk } : {}),
      jobs: rows,
      total: candidates.length + Object.values(unranked).reduce((a, b) => a + b, 0),
      shown: rows.length,
      unranked,
    },
  };
}

/** The `limit` candidates with the latest `at` (ties: by key), newest first, without sorting them all. */
export function newest<T extends { key: string; at: number }>(candidates: readonly T[], limit: number): T[] {
  const before = (a: T, b: T) => a.at > b.at || (a.at === b.at && a.key < b.key);
  // a bounded insertion list pays off for a screenful of rows; for thousands, sorting is as good
  if (candidates.length <= limit || limit > 1000)
    return [...candidates].sort((a, b) => (before(a, b) ? -1 : 1)).slice(0, limit);
  const top: T[] = []; // kept sorted, newest first; at most `limit` long
  for (const c of candidates) {
    if (top.length === limit && !before(c, top[limit - 1]!)) continue;
    let i = top.length;
    while (i > 0 && before(c, top[i - 1]!)) i--;
    top.splice(i, 0, c);
    if (top.length > limit) top.pop();
  }
  return top;
}

function retentionFacts(store: Store): { gen_bytes: number; gc_bytes: number; gc_cutoff: string } {
  const plan = planGc(store, parseDuration(DEFAULT_RETENTION));
  return { gen_bytes: sizeOf(store, store.layout.gen), gc_bytes: plan.bytes, gc_cutoff: plan.cutoff };
}
