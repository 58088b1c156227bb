// genjob compare [--shadow NAME [--shadow OTHER]] [KEY…]: per job, live vs shadow:NAME (or shadow:NAME
// vs shadow:OTHER): identical / differs / aborted / rejected / missing, then totals, the agreement
// rate (identical among jobs both sides answered) and the tokens each side's receipts report. --diff
// adds the unified diff of each differing job, from the first side's answer to the second's.
import { withHiddenWarning } from '../apply/unified-diff.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { answerDiff, type Comparison, compareSides, liveSide, shadowSide } from '../shadow/compare.js';
import { ShadowStore } from '../shadow/shadow-store.js';
import { resolveKey } from '../store/job-states.js';
import { existingPlane } from './shadow-plane.js';

export interface CompareOptions extends CommonOptions {
  shadow?: string[];
  keys?: string[];
  diff?: boolean;
}

function pct(x: number | null): string {
  return x === null ? 'n/a' : `${(x * 100).toFixed(1)}%`;
}

export function formatComparison(c: Comparison): string {
  const lines = [`${c.a} vs ${c.b}`, '', 'KEY           VERDICT    DETAIL'];
  for (const j of c.jobs) {
    let detail = `${j.a ?? 'missing'} / ${j.b ?? 'missing'}`;
    if (j.verdict === 'differs')
      detail = `${j.files!.length} file(s), +${j.added} -${j.removed} lines: ${j.files!.map((f) => f.path).join(', ')}`;
    if (j.verdict === 'identical') detail = '';
    lines.push(`${j.key.slice(0, 12)}  ${j.verdict.padEnd(9)}  ${detail}`.trimEnd());
  }
  const t = c.totals;
  lines.push(
    '',
    `${t.jobs} job(s): ${t.identical} identical, ${t.differs} differ, ${t.aborted} aborted, ${t.rejected} rejected, ${t.missing} missing`,
    `agreement: ${pct(c.agreement)} (${t.identical} of ${t.both} answered on both sides)`,
  );
  for (const [label, tk] of Object.entries(c.tokens))
    lines.push(
      `tokens ${label}: ${tk.prompt + tk.completion} (${tk.prompt} prompt + ${tk.completion} completion) over ${tk.answers} answer(s)`,
    );
  return lines.join('\n');
}

export async function compare(o: CompareOptions): Promise<CommandResult> {
  const store = openStore(o);
  let names = o.shadow ?? [];
  if (names.length === 0) {
    const planes = ShadowStore.planes(store);
    if (planes.length !== 1)
      throw new UsageError(
        'EGJ_USAGE',
        planes.length === 0
          ? `no shadow plane in ${store.layout.gen}/shadow/; run genjob work --shadow NAME first`
          : `several shadow planes (${planes.join(', ')}): name one or two with --shadow`,
      );
    names = planes;
  }
  if (names.length > 2)
    throw new UsageError('EGJ_USAGE', 'compare takes one --shadow (vs live) or two (A vs B)');
  // a plane never worked (a typo) would report every job missing on its side
  const planes = ShadowStore.planes(store);
  for (const n of names) existingPlane(store, n, planes);
  const [first, second] = names.map((n) => shadowSide(store, n));
  const a = second ? first! : liveSide(store);
  const b = second ?? first!;
  const keys = (o.keys ?? []).map((k) => {
    if (/^[0-9a-f]{64}$/.test(k)) return k;
    return resolveKey(store, k);
  });
  const c = compareSides(a, b, keys);
  if (!o.diff) return { human: formatComparison(c), json: { ok: true, ...c } };
  const diffs = new Map(
    c.jobs.filter((j) => j.verdict === 'differs').map((j) => [j.key, answerDiff(j.key, a, b)]),
  );
  const sections = [...diffs].map(
    ([key, diff]) => `\ndiff of ${key.slice(0, 12)} (${a.label} → ${b.label}):\n${withHiddenWarning(diff)}`,
  );
  return {
    human: [formatComparison(c), ...sections].join('\n').replace(/\n+$/, ''),
    json: {
      ok: true,
      ...c,
      jobs: c.jobs.map((j) => (diffs.has(j.key) ? { ...j, diff: diffs.get(j.key) } : j)),
    },
  };
}
