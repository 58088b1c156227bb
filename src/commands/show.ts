// genjob show KEY: everything genjob knows about one job — its document, state, attempts and
// lease, receipt (as stored; `verify` is what checks it), dead-lettered material and journal.
// A key only in dead/ (dropped, cancelled, out of attempts) shows as dead with its reason; the
// reason of a dead, aborted or rejected job is the third line. Long output goes through the pager.

import { join } from 'node:path';
import type { CheckState } from '../check/check-state.js';
import { configForLooking } from '../cli/look-config.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore } from '../cli/root.js';
import { JobInvalidError } from '../core/job.js';
import { parseJob } from '../core/job-schema.js';
import { splitEnvelope } from '../core/receipt-peek.js';
import { terminalText } from '../core/terminal-text.js';
import { epochsOf, readAttempt } from '../store/attempts.js';
import { deadJobOf, deadReason } from '../store/dead-jobs.js';
import { peekRecord, readdirOrEmpty } from '../store/durable.js';
import { findJob, resolveKey } from '../store/job-states.js';
import { readKeyJournal } from '../store/journal.js';
import { readLease } from '../store/lease.js';
import type { Store } from '../store/store.js';
import { readTombstone } from '../store/tombstone.js';

function parseLoose(bytes: Buffer | undefined): unknown {
  if (!bytes) return null;
  try {
    const { payload, envelope } = splitEnvelope(JSON.parse(bytes.toString('utf8')));
    return envelope ? { envelope, payload } : payload;
  } catch {
    return { unreadable: bytes.subarray(0, 200).toString('utf8') };
  }
}

/** Why the job document at `file` (loosely parsed: `doc`) is not the job of `key`, or undefined when it is. */
function jobProblem(
  doc: Record<string, unknown> | null,
  key: string,
  file: string,
  record: boolean,
): JobInvalidError | undefined {
  if (doc === null || 'unreadable' in doc) return new JobInvalidError(file, 'malformed JSON');
  const job = record ? doc.job : doc;
  try {
    const { job: parsed } = parseJob(Buffer.from(JSON.stringify(job ?? null)), file);
    return parsed.key === key ? undefined : new JobInvalidError(file, `it is the job of key ${parsed.key}`);
  } catch (err) {
    if (err instanceof JobInvalidError) return err;
    throw err;
  }
}

function isApplyRecord(doc: Record<string, unknown> | null): boolean {
  return doc !== null && doc.schema === 'genjob/applied@1' && typeof doc.job === 'object';
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  requests: number;
}

/** One attempt in the spend ledger: what its receipt (kept or dead-lettered) says it cost. */
interface UsageRow {
  epoch: number;
  status: string | null;
  cached: boolean;
  usage: Usage | null;
  /** Where the receipt is, relative to .gen/; null when the attempt brought none back. */
  source: string | null;
}

/** One row per attempt, from receipts/<key>.json and the receipts of this key in dead/ (read loosely, not verified). */
function usageRows(
  store: Store,
  key: string,
  epochs: readonly number[],
  dead: readonly string[],
): UsageRow[] {
  const rows = new Map<number, UsageRow>();
  const sources = [
    `receipts/${key}.json`,
    ...dead.filter((n) => n.startsWith(`${key}.receipt.`)).map((n) => `dead/${n}`),
  ];
  for (const source of sources) {
    const bytes = peekRecord(store, join(store.layout.gen, source));
    if (bytes === undefined) continue;
    const loose = parseLoose(bytes) as Record<string, unknown>;
    const doc = (loose.payload ?? loose) as Record<string, unknown>;
    const named = /\.receipt\.e(\d+)\./.exec(source)?.[1];
    const epoch = Number.isSafeInteger(doc.epoch) ? (doc.epoch as number) : Number(named ?? 0);
    if (rows.has(epoch)) continue; // receipts/ first: the receipt that stands wins
    const u = doc.usage as Record<string, unknown> | undefined;
    const n = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : 0);
    rows.set(epoch, {
      epoch,
      status: typeof doc.status === 'string' ? doc.status : 'unreadable',
      cached: doc.cached === true,
      usage:
        u && typeof u === 'object'
          ? {
              prompt_tokens: n(u.prompt_tokens),
              completion_tokens: n(u.completion_tokens),
              requests: n(u.requests),
            }
          : null,
      source,
    });
  }
  for (const epoch of epochs)
    if (!rows.has(epoch)) rows.set(epoch, { epoch, status: null, cached: false, usage: null, source: null });
  return [...rows.values()].sort((a, b) => a.epoch - b.epoch);
}

function usageLine(r: UsageRow): string {
  const spend = r.usage
    ? `${r.usage.prompt_tokens} prompt + ${r.usage.completion_tokens} completion tokens in ${r.usage.requests} request(s)`
    : r.source
      ? 'no usage reported'
      : 'no receipt';
  return `epoch ${r.epoch}  ${terminalText(r.status ?? '-').padEnd(8)}  ${spend}${r.cached ? ' (answered from the host cache)' : ''}${r.source ? `  ${r.source}` : ''}`;
}

/** Each attempt's record, whether it counted against --max-attempts, and the host that answered it. */
function attemptRows(store: Store, key: string) {
  const names = new Set(readdirOrEmpty(store, store.layout.attemptsDir(key)));
  return epochsOf(store, key).map((e) => {
    const a = readAttempt(store, key, e);
    return a === undefined ? a : { ...a, spent: !names.has(`${e}.unspent`) };
  });
}

export async function show(o: CommonOptions & { key: string }): Promise<CommandResult> {
  const store = lookStore(o);
  const configWarning = await configForLooking(store, 'show');
  const key = resolveKey(store, o.key, { dead: true });
  // the journal is the biggest read: it goes on (on the thread pool) while the rest is read here
  const journalRead = readKeyJournal(store, key);
  journalRead.catch(() => {}); // awaited below; a failure is reported there
  const found = findJob(store, key);
  const died = found ? undefined : deadJobOf(store, key);
  const why = died ? deadReason(store, died.name) : null;
  const doc = parseLoose(
    found?.bytes ?? (died ? peekRecord(store, join(store.layout.dir('dead'), died.name)) : undefined),
  ) as Record<string, unknown> | null;
  // a dead job file is the job document; an older genjob's drop of a reverted job moved its apply record
  // there under the job's name, which embeds it
  const record =
    found?.state === 'applied' || found?.state === 'reverted' || (died !== undefined && isApplyRecord(doc));
  const jobFile = found?.file ?? (died ? join(store.layout.dir('dead'), died.name) : undefined);
  const invalid = jobFile === undefined ? undefined : jobProblem(doc, key, jobFile, record);
  const job = invalid
    ? null
    : doc && typeof doc.job === 'object'
      ? (doc.job as Record<string, unknown>)
      : doc;
  // retention: what gc pruned of this key, and when
  const tombstone = readTombstone(store, key) ?? null;
  const state =
    found?.state ?? (died ? 'dead' : tombstone ? `pruned by gc (was ${tombstone.state})` : 'unknown');
  const attempts = attemptRows(store, key);
  const receipt = parseLoose(peekRecord(store, store.layout.receipt(key)));
  const receiptDoc = ((receipt as { payload?: unknown } | null)?.payload ?? receipt) as Record<
    string,
    unknown
  > | null;
  const reason = why
    ? `${why.code}: ${why.reason}`
    : receiptDoc && receiptDoc.status !== 'ok' && typeof receiptDoc.status === 'string'
      ? `${receiptDoc.status}: ${String(receiptDoc.reason ?? '(no reason given)')}`
      : null;
  const dead = readdirOrEmpty(store, store.layout.dir('dead')).filter(
    (n) => n.startsWith(key) && !n.endsWith('.why.json'),
  );
  const usage = usageRows(store, key, epochsOf(store, key), dead);
  const events = await journalRead;
  const lease = readLease(store, key) ?? null;
  const checks = await showChecks(store, key);
  const applied = record ? { writes: doc?.writes, applied_at: doc?.applied_at } : null;
  const lines = [
    `key       ${key}`,
    `state     ${state}`,
    ...(reason ? [`reason    ${terminalText(reason.split('\n')[0]!)}`] : []),
    ...(invalid ? [`job       unreadable: ${terminalText(invalid.message)}`] : []),
    `inputs    ${((job?.inputs as Array<{ path: string; sha256: string | null }>) ?? []).map((i) => `${i.path}${i.sha256 === null ? ' (create)' : ''}`).join(', ')}`,
    ...(Array.isArray(job?.reads)
      ? [`reads     ${(job.reads as Array<{ path: string }>).map((r) => r.path).join(', ')}`]
      : []),
    `attempts  ${attempts.map((a) => `epoch ${a?.epoch} by ${a?.worker.id} at ${a?.claimed_at} → ${a?.destination}${a?.spent === false ? ' (not counted: no generator was reached)' : ''}`).join('\n          ') || 'none'}`,
    `lease     ${lease ? `epoch ${lease.epoch}, worker ${lease.worker.id}` : 'none'}`,
    `usage     ${usage.map(usageLine).join('\n          ') || 'none'}`,
    ...(checks.length > 0 ? [`checks    ${checks.map(checkLine).join('\n          ')}`] : []),
    '',
    'instruction:',
    ...String(job?.instruction ?? '')
      .split('\n')
      .map((l) => `  ${l}`),
    '',
    // a block under its heading, indented as the instruction is
    ...(receipt ? ['receipt:', ...indented(receipt)] : ['receipt:   none']),
  ];
  if (applied) lines.push('', 'applied:', ...indented(applied));
  if (dead.length) lines.push('', 'dead-lettered:', ...dead.map((d) => `  dead/${d}`));
  if (tombstone) {
    lines.push(
      '',
      `tombstone: ${tombstone.state}${tombstone.finished_at ? ` at ${tombstone.finished_at}` : ''}, pruned on ${tombstone.pruned_at}`,
      `  receipt sha256 ${tombstone.receipt_sha256 ?? '-'}, job digest ${tombstone.job_digest ?? '-'}`,
      ...tombstone.pruned.map((p) => `  pruned ${p.kind} ${p.path} (${p.bytes} bytes)`),
    );
  }
  lines.push(
    '',
    'journal:',
    ...events.map(
      (e) =>
        `  ${e.at} ${e.event}${e.reason ? `: ${terminalText(String(e.reason))}` : ''}${e.epoch ? ` (epoch ${e.epoch})` : ''}`,
    ),
  );
  return {
    human: lines.join('\n'),
    page: true,
    // a job file that is not a job is bad input, as everywhere: show what else is known, and exit 2
    ...(invalid
      ? {
          exitCode: invalid.exitCode,
          stderr: `${configWarning}genjob: ${invalid.code}: ${invalid.message}\n`,
        }
      : configWarning
        ? { stderr: configWarning }
        : {}),
    json: {
      ...(invalid ? { ok: false, code: invalid.code, message: invalid.message } : { ok: true }),
      key,
      state: found?.state ?? (died ? 'dead' : null),
      reason,
      job,
      attempts,
      lease,
      usage,
      receipt,
      applied,
      dead,
      journal: events,
      tombstone,
      checks,
    },
  };
}

/** A record as indented JSON lines, under its heading. */
function indented(record: unknown): string[] {
  return JSON.stringify(record, null, 2)
    .split('\n')
    .map((l) => `  ${l}`);
}

type ShownCheck = CheckState & { attempts?: unknown[]; recorded_at?: string };

/** Each declared checker's state for the job, and each checker that left records without being declared. */
async function showChecks(store: Store, key: string): Promise<ShownCheck[]> {
  const { recordedCheckers } = await import('../check/record-paths.js');
  const { declaredCheckers } = await import('../check/declared-checkers.js');
  const names = [...new Set([...(await declaredCheckers(store)), ...recordedCheckers(store, key)])];
  if (names.length === 0) return [];
  const { checkContext, stateOf } = await import('../check/check-state.js');
  const ctx = await checkContext(store.root);
  return names.map((n) => {
    const { record, ...state } = stateOf(ctx, key, n);
    return record
      ? { ...state, attempts: record.facts.attempts, recorded_at: record.facts.finished_at }
      : state;
  });
}

function checkLine(c: ShownCheck): string {
  if (c.verdict === 'missing') return `${c.checker}: no record`;
  const when = c.current ? 'current' : `stale (${c.stale})`;
  return `${c.checker}: ${c.verdict} ${c.marks}, ${when}, record ${c.recordDigest?.slice(0, 12)}${c.recorded_at ? ` of ${c.recorded_at}` : ''}`;
}
