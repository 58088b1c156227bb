// A job's page, from its model and the diffs drawn for it (pure): the instruction, each output as a
// side-by-side and a unified diff against its input, the receipt's facts, each checker's attempts with
// the last lines of their logs (the full log one link away) and a judge's reasons, and each shadow
// plane's answer beside the live one. No script runs on it.
import { SHA256_HEX } from '../core/sha256.js';
import type { Assets } from './assets.js';
import { badge, checkCell, shortKey, statusOf } from './cells.js';
import type { DiffView } from './diff-view.js';
import { type Html, href, html } from './escape.js';
import { formatMs } from './histogram.js';
import type { ReportCheck, ReportFile, ReportJob, ReportReceipt, ReportShadow } from './model.js';
import { backToIndex, renderPage } from './page.js';

/** What the page shows that is drawn from bytes rather than from the model. */
export interface JobPageBytes {
  /** Output path → its diff against the input, or a note why there is none. */
  diffs: ReadonlyMap<string, DiffView>;
  /** Log sha256 → its last lines. */
  logTails: ReadonlyMap<string, string>;
  /** Shadow plane → output path → live vs shadow. */
  shadowDiffs: ReadonlyMap<string, ReadonlyMap<string, DiffView>>;
}

const facts = (rows: ReadonlyArray<readonly [string, Html | string | number | null]>) =>
  html`<table class="facts">${rows.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v ?? html`<span class="muted">\u2014</span>`}</td></tr>`)}</table>`;

/**
 * A file's diff in both views, each a <details> its <summary> opens and closes (a button a keyboard
 * reaches, named by the view and, for a screen reader, the file). `apply`: the command that shows a diff
 * too large for the page, when there is one.
 */
function view(v: DiffView | undefined, path: string, apply?: string): Html {
  if (!v) return html`<p class="note">no diff drawn</p>`;
  if (v.kind === 'note')
    return html`<p class="note">${v.note}${v.large && apply ? html`; see <code>${apply}</code>` : ''}</p>`;
  const of = html`<span class="vh"> diff of ${path}</span>`;
  return html`<details open><summary>side by side${of}</summary>${v.split}</details><details><summary>unified${of}</summary>${v.unified}</details>`;
}

const FILE_NOTES: Record<ReportFile['bytes'], string | null> = {
  ok: null,
  missing: 'the output bytes are no longer in .gen/ (pruned or dropped): nothing to draw',
  drift: "the bytes in .gen/out/ do not hash to the receipt's digest: not drawn (genjob verify says more)",
  large: 'the output is over 4 MiB: not drawn',
  'bad-path': 'the receipt names a path that breaks the path rules: not drawn',
};

/** What a reviewer must know before reading a diff that brings in hidden characters. */
function hiddenNote(count: number, where: string): Html {
  return html`<p class="note bad hidden-warning">${where} ${count} hidden character(s): bidirectional controls or invisible code points, which can make code read differently from how it runs. Each is shown as its code point, marked like <span class="hidden-char">U+202E</span>.</p>`;
}

function output(f: ReportFile, v: DiffView | undefined, n: number, key: string): Html {
  const note = FILE_NOTES[f.bytes];
  const counts =
    v?.kind === 'text'
      ? html` <span class="v-pass">+${v.added}</span> <span class="v-fail">\u2212${v.removed}</span>`
      : '';
  return html`<section class="file" id="file-${n}"><h3 class="file-head"><span class="mono">${f.path}</span>${counts} <span class="muted mono">${f.input === null ? 'created' : `from sha256:${f.input.slice(0, 12)}`} \u2192 sha256:${f.sha256.slice(0, 12)}</span></h3>
${note ? html`<p class="note bad">${note}</p>` : !f.inputFound ? html`<p class="note">the input's bytes (sha256:${f.input?.slice(0, 12)}) are no longer at hand: the file changed since mint and was never applied; drawn as a new file</p>` : ''}
${!note && v?.hidden ? hiddenNote(v.hidden, v.kind === 'text' ? 'These lines add' : v.large ? 'Its added lines, not drawn, hold' : 'This file, not drawn, holds') : ''}
${note ? '' : html`<div class="file-body">${view(v, f.path, `genjob apply ${key} --dry-run --diff`)}</div>`}</section>`;
}

function receiptFacts(r: ReportReceipt, problem: string | null): Html {
  const usage = r.usage
    ? `${r.usage.prompt} prompt + ${r.usage.completion} completion tokens in ${r.usage.requests} request(s)`
    : null;
  return html`${problem ? html`<p class="note bad">does not decode under this repository's trust policy: ${problem}</p>` : ''}${facts(
    [
      ['status', badge('s', r.status)],
      ['reason', r.reason === null ? null : html`<pre class="reason">\n${r.reason}</pre>`],
      ['epoch', r.epoch],
      [
        'generator',
        html`<span class="mono">${r.generator}</span>${r.generatorVersion ? ` (${r.generatorVersion})` : ''}`,
      ],
      ['host', html`<span class="mono">${r.host}</span>`],
      ['worker', html`<span class="mono">${r.workerId}</span>`],
      ['sandbox', r.sandbox],
      ['signer', html`<span class="${r.signerTrusted ? 'v-pass' : ''}">${r.signer}</span>`],
      ['plane', r.plane],
      ['answered from cache', r.cached ? 'yes' : 'no'],
      ['batch', r.batch],
      ['started', r.startedAt],
      ['finished', r.finishedAt],
      ['generation time', r.generateMs === null ? null : formatMs(r.generateMs)],
      ['usage', usage],
      ['job digest', r.jobDigest ? html`<span class="mono">sha256:${r.jobDigest}</span>` : null],
      ['receipt', html`<span class="mono">sha256:${r.digest}</span>`],
    ],
  )}`;
}

function check(c: ReportCheck, bytes: JobPageBytes): Html {
  const attempts = c.attempts.map((a, i) => {
    // a log is named by its sha256; anything else is not a log this page can link to
    const log = a.log !== null && SHA256_HEX.test(a.log) ? a.log : null;
    const tail = log ? bytes.logTails.get(log) : undefined;
    return html`<tr><td class="num">${i + 1}</td><td class="num">${a.exit ?? ''}</td><td class="num">${a.ms === null ? '' : formatMs(a.ms)}</td><td>${
      log
        ? html`${tail === undefined ? html`<span class="muted">log not at hand</span>` : html`<pre class="log" tabindex="0" role="region" aria-label="${c.checker}, attempt ${i + 1}: the last lines of its log">\n${tail}</pre>`}<a href="${href(`../logs/${log}.html`)}">full log<span class="vh"> of ${c.checker}, attempt ${i + 1}</span></a>`
        : html`<span class="muted">no log</span>`
    }</td></tr>`;
  });
  return html`<section class="check" data-checker="${c.checker}"><h3>${c.checker} ${checkCell(c)}</h3>
${c.recordDigest ? html`<p class="muted mono">record sha256:${c.recordDigest}</p>` : ''}
${c.attempts.length ? html`<table class="attempts"><thead><tr><th scope="col">#<span class="vh"> attempt</span></th><th scope="col">exit</th><th scope="col">time</th><th scope="col">log (last lines)</th></tr></thead><tbody>${attempts}</tbody></table>` : ''}
${
  c.judge.length
    ? html`<table class="judge"><thead><tr><th scope="col">sample</th><th scope="col">answer</th><th scope="col">score</th><th scope="col">reason</th></tr></thead><tbody>${c.judge.map(
        (s, i) =>
          html`<tr><td class="num">${i + 1}</td><td>${s.pass === null ? badge('v', 'error') : badge('v', s.pass ? 'pass' : 'fail')}</td><td class="num">${s.score ?? ''}</td><td><pre class="reason">\n${s.reason}</pre></td></tr>`,
      )}</tbody></table>`
    : ''
}</section>`;
}

function side(
  title: string,
  status: string | null,
  generator: string | null,
  tokens: number | null,
  reason: string | null,
): Html {
  return html`<div><h4>${title}</h4>${facts([
    ['status', status === null ? 'no answer' : badge('s', status)],
    ['generator', generator === null ? null : html`<span class="mono">${generator}</span>`],
    ['tokens', tokens],
    ['reason', reason === null ? null : html`<pre class="reason">\n${reason}</pre>`],
  ])}</div>`;
}

function shadow(s: ReportShadow, job: ReportJob, bytes: JobPageBytes): Html {
  const r = job.receipt;
  const tokens = r?.usage ? r.usage.prompt + r.usage.completion : null;
  const diffs = bytes.shadowDiffs.get(s.plane);
  return html`<h3>${s.plane} ${badge('v', s.verdict)}</h3>
<div class="sides">${side('live', r?.status ?? null, r?.generator ?? null, tokens, r?.reason ?? null)}${side(s.plane, s.status, s.generator, s.status === null ? null : s.tokens, s.reason)}</div>
${s.files
  .filter((f) => f.live !== f.shadow)
  .map(
    (f) =>
      html`<section class="file"><h4 class="file-head"><span class="mono">${f.path}</span> <span class="muted">live (left) vs ${s.plane} (right)</span></h4><div class="file-body">${view(diffs?.get(f.path), f.path)}</div></section>`,
  )}`;
}

export function renderJob(job: ReportJob, bytes: JobPageBytes, assets: Assets, fingerprint: string): string {
  const r = job.receipt;
  let hidden = 0;
  for (const v of bytes.diffs.values()) hidden += v.hidden ?? 0;
  const body = html`<h1>job <span class="mono">${shortKey(job.key)}</span> ${badge('s', job.state)} ${badge('s', statusOf(job))}</h1>
${facts([
  ['key', html`<span class="mono">${job.key}</span>`],
  ['state', job.state],
  ['dead', job.dead ? `${job.dead.code}: ${job.dead.reason}` : null],
  ['epoch', job.epoch],
  ['host', job.host],
  [
    'allowed paths',
    html`${job.inputs.map((i, n) => html`${n > 0 ? html`<br>` : ''}<span class="mono">${i.path}</span>${i.sha256 === null ? ' (created)' : ''}`)}`,
  ],
])}
<h2>Instruction</h2>
<pre class="instruction">\n${job.instruction}</pre>
<h2>Outputs</h2>
${hidden > 0 ? hiddenNote(hidden, 'This change adds') : ''}
${job.files.length === 0 ? html`<p class="muted">${r ? 'The receipt names no output.' : 'No receipt yet.'}</p>` : job.files.map((f, n) => output(f, bytes.diffs.get(f.path), n, job.key))}
<h2>Receipt</h2>
${r ? receiptFacts(r, job.receiptProblem) : html`<p class="muted">${job.receiptProblem ?? 'No receipt yet.'}</p>`}
${job.checks.length ? html`<h2>Checks</h2>${job.checks.map((c) => check(c, bytes))}` : ''}
${job.shadows.length ? html`<h2>Shadow answers</h2>${job.shadows.map((s) => shadow(s, job, bytes))}` : ''}`;
  return renderPage({
    title: `genjob job ${shortKey(job.key)}`,
    nav: backToIndex(),
    body,
    assets,
    script: false,
    fingerprint,
  });
}
