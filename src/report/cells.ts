// Small pieces both pages draw the same way: a state or status badge, a check's cell (verdict, one mark
// per attempt, stale or missing), a shadow verdict, a count of tokens. Markup only through escape.ts.
import { type Html, html } from './escape.js';
import type { ReportCheck, ReportJob } from './model.js';

export function badge(kind: 's' | 'v', word: string): Html {
  return html`<span class="${kind === 's' ? 'state' : 'verdict'} ${kind}-${/^[a-z]+$/.test(word) ? word : 'unknown'}">${word}</span>`;
}

/** The check of `checker` on a job, or its absence as a `missing` verdict. */
export function checkOf(job: ReportJob, checker: string): ReportCheck {
  return (
    job.checks.find((c) => c.checker === checker) ?? {
      checker,
      verdict: 'missing',
      current: true,
      marks: '',
      recordDigest: null,
      attempts: [],
      judge: [],
      spent: null,
    }
  );
}

export function staleWord(c: ReportCheck): string | null {
  if (c.current || c.verdict === 'missing') return null;
  return `stale: ${c.stale ?? 'record'}`;
}

export function checkCell(c: ReportCheck): Html {
  const stale = staleWord(c);
  return html`${badge('v', c.verdict)}${c.marks ? html` <span class="marks" title="attempts, oldest first">${c.marks}</span>` : ''}${stale ? html` <span class="stale">${stale}</span>` : ''}`;
}

/** Words the verdict filter matches a row by: every checker's verdict, and `stale` when one is. */
export function verdictWords(job: ReportJob, checkers: readonly string[]): string {
  if (checkers.length === 0) return '';
  const words = new Set<string>();
  for (const name of checkers) {
    const c = checkOf(job, name);
    words.add(c.verdict);
    if (staleWord(c)) words.add('stale');
  }
  return [...words].sort().join(' ');
}

export function tokensOf(job: ReportJob): number | null {
  const u = job.receipt?.usage;
  return u ? u.prompt + u.completion : null;
}

/**
 * The status word of a row: the receipt's status, `unreadable` for a receipt file that is not one, a dead
 * job's code, or `none` before a receipt.
 */
export function statusOf(job: ReportJob): string {
  if (job.receipt) return job.receipt.status;
  if (job.receiptProblem) return 'unreadable';
  if (job.state === 'dead') return 'dead';
  return 'none';
}

export function shortKey(key: string): string {
  return key.slice(0, 12);
}
