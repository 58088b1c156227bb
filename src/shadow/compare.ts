// Compare two planes' answers job by job: live vs shadow:NAME, or shadow:A vs shadow:B. Per key the
// verdict is identical (same outputs, byte for byte), differs (which files, lines added/removed),
// aborted / rejected (either side's status), or missing (a side has no answer). Receipts are read,
// not trusted: this is a report, and nothing it reads can reach the tree. Writes nothing.
import { join } from 'node:path';
import { fileDiff } from '../apply/unified-diff.js';
import { splitEnvelope } from '../core/receipt-peek.js';
import { listNames, readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { lineDelta } from './line-diff.js';
import { ShadowStore } from './shadow-store.js';

interface Output {
  path: string;
  sha256: string;
}
interface Answer {
  status: string;
  outputs: Output[];
  tokens: { prompt: number; completion: number };
  reason: string | null;
}

export interface Side {
  label: string;
  keys(): string[];
  answer(key: string): Answer | undefined;
  bytes(key: string, o: Output): Buffer | undefined;
}

export type Verdict = 'identical' | 'differs' | 'aborted' | 'rejected' | 'missing';

export interface KeyComparison {
  key: string;
  verdict: Verdict;
  a: string | null;
  b: string | null;
  files?: Array<{ path: string; added: number | null; removed: number | null }>;
  added?: number;
  removed?: number;
}

export interface Comparison {
  a: string;
  b: string;
  jobs: KeyComparison[];
  totals: Record<Verdict, number> & { jobs: number; both: number };
  agreement: number | null;
  tokens: Record<string, { prompt: number; completion: number; answers: number }>;
}

function readAnswer(bytes: Buffer | undefined): Answer | undefined {
  if (!bytes) return undefined;
  try {
    const doc = splitEnvelope(JSON.parse(bytes.toString('utf8')) as Record<string, unknown>).payload;
    const usage = (doc.usage ?? {}) as Record<string, unknown>;
    const n = (v: unknown) => (Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : 0);
    const outputs = Array.isArray(doc.outputs)
      ? (doc.outputs as Array<Record<string, unknown>>).map((o) => ({
          path: String(o.path),
          sha256: String(o.sha256),
        }))
      : [];
    return {
      status: String(doc.status),
      outputs,
      tokens: { prompt: n(usage.prompt_tokens), completion: n(usage.completion_tokens) },
      reason: typeof doc.reason === 'string' ? doc.reason : null,
    };
  } catch {
    return { status: 'unreadable', outputs: [], tokens: { prompt: 0, completion: 0 }, reason: null };
  }
}

export function liveSide(store: Store): Side {
  return {
    label: 'live',
    keys: () => listNames(store, store.layout.dir('receipts')),
    answer: (key) => readAnswer(readIfExists(store, store.layout.receipt(key))),
    bytes: (key, o) =>
      readIfExists(store, join(store.layout.outDir(key), o.path)) ??
      readIfExists(store, store.layout.object(o.sha256)),
  };
}

export function shadowSide(store: Store, name: string): Side {
  const plane = new ShadowStore(store, name);
  return {
    label: plane.plane,
    keys: () => plane.keys(),
    answer: (key) => readAnswer(plane.receipt(key)),
    bytes: (key, o) => readIfExists(store, join(plane.filesDir(key), o.path)),
  };
}

/**
 * The paths two ok answers differ in, with each side's bytes: null where the path is not that side's
 * output (it left the file as it was), undefined where its bytes cannot be read.
 */
function differingFiles(
  key: string,
  x: Answer,
  y: Answer,
  a: Side,
  b: Side,
): Array<{ path: string; a: Buffer | null | undefined; b: Buffer | null | undefined }> {
  const xs = new Map(x.outputs.map((o) => [o.path, o]));
  const ys = new Map(y.outputs.map((o) => [o.path, o]));
  const paths = [...new Set([...xs.keys(), ...ys.keys()])].sort();
  return paths.flatMap((path) => {
    const ox = xs.get(path);
    const oy = ys.get(path);
    if (ox && oy && ox.sha256 === oy.sha256) return [];
    return [{ path, a: ox ? a.bytes(key, ox) : null, b: oy ? b.bytes(key, oy) : null }];
  });
}

/** The unified diff from side a's answer to side b's for a job both answered `ok` ('' when identical). */
export function answerDiff(key: string, a: Side, b: Side): string {
  const x = a.answer(key);
  const y = b.answer(key);
  if (x?.status !== 'ok' || y?.status !== 'ok') return '';
  const labels = { before: a.label, after: b.label };
  return differingFiles(key, x, y, a, b)
    .map((f) =>
      f.a === undefined || f.b === undefined
        ? `--- ${labels.before}/${f.path}\n+++ ${labels.after}/${f.path}\nbytes unreadable: ${f.path}\n`
        : fileDiff({ path: f.path, before: f.a, after: f.b }, labels),
    )
    .join('');
}

function compareKey(key: string, a: Side, b: Side): KeyComparison {
  const x = a.answer(key);
  const y = b.answer(key);
  const base = { key, a: x?.status ?? null, b: y?.status ?? null };
  if (!x || !y) return { ...base, verdict: 'missing' };
  if (x.status !== 'ok' || y.status !== 'ok') {
    const bad = [x.status, y.status];
    return { ...base, verdict: bad.includes('aborted') ? 'aborted' : 'rejected' };
  }
  const files = differingFiles(key, x, y, a, b).map(({ path, a: bx, b: by }) => {
    const delta =
      bx !== undefined && by !== undefined ? lineDelta(bx ?? Buffer.alloc(0), by ?? Buffer.alloc(0)) : null;
    return { path, added: delta?.added ?? null, removed: delta?.removed ?? null };
  });
  if (files.length === 0) return { ...base, verdict: 'identical' };
  const sum = (f: 'added' | 'removed') => files.reduce((s, v) => s + (v[f] ?? 0), 0);
  return { ...base, verdict: 'differs', files, added: sum('added'), removed: sum('removed') };
}

export function compareSides(a: Side, b: Side, keys?: readonly string[]): Comparison {
  const selected = keys && keys.length > 0 ? [...keys] : [...new Set([...a.keys(), ...b.keys()])].sort();
  const jobs = selected.map((k) => compareKey(k, a, b));
  const totals = {
    jobs: jobs.length,
    both: 0,
    identical: 0,
    differs: 0,
    aborted: 0,
    rejected: 0,
    missing: 0,
  };
  for (const j of jobs) {
    totals[j.verdict] += 1;
    if (j.verdict !== 'missing') totals.both += 1;
  }
  const tokens: Comparison['tokens'] = {};
  for (const side of [a, b]) {
    const t = { prompt: 0, completion: 0, answers: 0 };
    for (const key of selected) {
      const ans = side.answer(key);
      if (!ans) continue;
      t.answers += 1;
      t.prompt += ans.tokens.prompt;
      t.completion += ans.tokens.completion;
    }
    tokens[side.label] = t;
  }
  return {
    a: a.label,
    b: b.label,
    jobs,
    totals,
    agreement: totals.both === 0 ? null : totals.identical / totals.both,
    tokens,
  };
}
