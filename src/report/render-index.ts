// The report's index page, from the model alone (pure): counts per state, the run's gate, tokens and
// cost per generator and mode, the time histogram, and one row per job — paths, status, generator,
// epoch, host, signer, sandbox, tokens, time, a cell per checker and per shadow plane. The inlined
// script (assets/report.js) filters and sorts those rows in place; without it every row still shows.
import type { Assets } from './assets.js';
import { badge, checkCell, checkOf, shortKey, statusOf, tokensOf, verdictWords } from './cells.js';
import { type Html, href, html } from './escape.js';
import { formatMs, histogram } from './histogram.js';
import { CHECK_VERDICTS, type ReportJob, type ReportModel, STATE_ORDER } from './model.js';
import { renderPage } from './page.js';

const MAX_PATHS = 3;

function counts(model: ReportModel): Html {
  // one pass over the jobs: a state's count, and a received job's by its receipt's status
  const tally = new Map<string, number>();
  const add = (word: string) => tally.set(word, (tally.get(word) ?? 0) + 1);
  for (const j of model.jobs) {
    add(j.state);
    if (j.state === 'received' && j.receipt) add(`received ${j.receipt.status}`);
    if (j.receiptProblem) add('undecodable');
  }
  const n = (word: string) => tally.get(word) ?? 0;
  const card = (label: string, value: number | string, detail?: Html) =>
    html`<div class="card"><div class="n">${value}</div><div class="l">${label}${detail ? html`<br>${detail}` : ''}</div></div>`;
  const states = STATE_ORDER.filter((s) => s !== 'unknown' || n(s) > 0);
  const received = (status: string) => n(`received ${status}`);
  return html`<div class="cards">${card('jobs', model.jobs.length)}${states.map((s) =>
    card(
      s,
      n(s),
      s === 'received'
        ? html`ok ${received('ok')} &middot; aborted ${received('aborted')} &middot; rejected ${received('rejected')}`
        : undefined,
    ),
  )}${n('undecodable') > 0 ? card('receipts that do not decode', n('undecodable'), html`what they claim is not vouched for`) : ''}</div>`;
}

function gate(model: ReportModel): Html {
  const run = model.run;
  if (!run)
    return html`<p class="muted">No run selected: a gate belongs to a run (<code>genjob report --run NAME</code>).</p>`;
  const g = run.gate;
  const foreign = run.sealed
    ? ''
    : html` <span class="stale" id="run-unsealed">not minted by your genjob: gate and apply refuse this run until your own mint of it seals it</span>`;
  if (!g)
    return html`<p>Run <b>${run.name}</b>: ${run.keys.length} intended job(s); no gate record yet (<code>genjob gate --run ${run.name}</code> writes one when the gate closes).${foreign}</p>`;
  const word = g.met ? 'closed: met' : 'closed: not met';
  return html`<table class="facts">
<tr><th scope="row">run</th><td>${run.name} (${run.keys.length} intended job(s))${foreign}</td></tr>
<tr><th scope="row">gate</th><td><b class="${g.met ? 'gate-closed' : 'gate-notmet'}" id="gate-state">${word}</b>${g.stale ? html` <span class="stale">stale: its evidence changed since</span>` : ''}${g.sealed ? '' : html` <span class="stale" id="gate-unsealed">not decided by your genjob gate: its policy is the record's own, and apply --gated refuses it</span>`}</td></tr>
<tr><th scope="row">passed</th><td>${g.rate}</td></tr>
<tr><th scope="row">policy</th><td>${g.policy}</td></tr>
<tr><th scope="row">gate record</th><td class="mono">${g.file}${g.signed ? ' (signed)' : ''}<br>sha256:${g.recordDigest}</td></tr>
</table>`;
}

function spend(model: ReportModel): Html {
  if (model.spend.length === 0) return html`<p class="muted">No receipt reports token usage.</p>`;
  const priced = model.spend.some((r) => r.cost !== null);
  const total = model.spend.reduce((s, r) => s + (r.cost ?? 0), 0);
  return html`<table class="spend"><thead><tr><th scope="col">generator</th><th scope="col">mode</th><th scope="col" class="num">prompt</th><th scope="col" class="num">completion</th><th scope="col" class="num">requests</th>${priced ? html`<th scope="col" class="num">cost</th>` : ''}</tr></thead><tbody>${model.spend.map(
    (r) =>
      html`<tr><td class="gen mono">${r.generator}</td><td>${r.mode}</td><td class="num">${r.prompt}</td><td class="num">${r.completion}</td><td class="num">${r.requests}</td>${priced ? html`<td class="num">${r.cost === null ? '' : r.cost.toFixed(4)}</td>` : ''}</tr>`,
  )}${priced ? html`<tr><th scope="row" colspan="5">total</th><td class="num"><b>${total.toFixed(4)}</b></td></tr>` : ''}</tbody></table>${priced ? '' : html`<p class="muted">Set GENJOB_PRICE_IN and GENJOB_PRICE_OUT (per million tokens) to see costs.</p>`}`;
}

/** The hidden characters a job's added lines bring in, as its page counts them (its flag, and its filter word). */
function jobHiddenAdded(job: ReportJob): number {
  return job.files.reduce((n, f) => n + f.hiddenAdded, 0);
}

function paths(job: ReportJob, hidden: number): Html {
  const all = job.inputs.map((i) => i.path);
  const shown = all.slice(0, MAX_PATHS);
  return html`${shown.map((p, i) => html`${i > 0 ? html`<br>` : ''}<span class="mono">${p}</span>`)}${all.length > MAX_PATHS ? html`<br><span class="muted">+${all.length - MAX_PATHS} more</span>` : ''}${hidden > 0 ? html`<br><span class="hidden-added">adds ${hidden} hidden character(s)</span>` : ''}`;
}

function row(job: ReportJob, model: ReportModel, undrawn: string | undefined): Html {
  const r = job.receipt;
  const status = statusOf(job);
  const tokens = tokensOf(job);
  // its first line with text: an instruction starting with a newline showed an empty cell
  const text = job.instruction.replace(/^\s+/, '');
  const end = text.indexOf('\n');
  const firstLine = end < 0 ? text : text.slice(0, end);
  // an entity, not the character: one character beyond Latin-1 makes V8 hold the whole page as UTF-16
  const instruction = firstLine.length > 90 ? html`${firstLine.slice(0, 89)}&hellip;` : firstLine;
  const hidden = jobHiddenAdded(job);
  return html`<tr data-state="${job.state}" data-status="${status}" data-verdicts="${verdictWords(job, model.checkers)}" data-hidden="${hidden > 0 ? 'added' : 'none'}">
<td data-v="${job.key}"><a class="mono" href="${href(`jobs/${job.key}.html`)}" aria-label="job ${shortKey(job.key)}">${shortKey(job.key)}</a><br><span class="muted">${instruction}</span>${undrawn ? html`<br><span class="row-problem">page not drawn: ${undrawn}</span>` : ''}</td>
<td data-v="${STATE_ORDER.indexOf(job.state)}">${badge('s', job.state)}</td>
<td data-v="${status}">${badge('s', status)}${job.receiptProblem ? html`<br><span class="row-problem" title="${job.receiptProblem}">${job.receipt ? 'does not decode' : 'unreadable'}</span>` : ''}</td>
<td class="paths" data-v="${job.inputs[0]?.path ?? ''}">${paths(job, hidden)}</td>
<td class="gen mono">${r?.generator ?? ''}</td>
<td class="num" data-v="${job.epoch}">${job.epoch}</td>
<td class="mono">${job.host ?? ''}</td>
<td>${r ? html`<span class="${r.signerTrusted ? 'v-pass' : 'muted'}">${r.signer}</span>` : ''}</td>
<td>${r?.sandbox ?? ''}</td>
<td class="num" data-v="${tokens ?? -1}">${tokens ?? ''}</td>
<td class="num" data-v="${r?.generateMs ?? -1}">${r && r.generateMs !== null ? formatMs(r.generateMs) : ''}</td>
${model.checkers.map((name) => {
  const c = checkOf(job, name);
  return html`<td class="check" data-checker="${name}" data-v="${c.verdict}">${checkCell(c)}</td>`;
})}
${job.shadows.map((s) => html`<td class="shadow" data-v="${s.verdict}">${badge('v', s.verdict)}</td>`)}
</tr>`;
}

/** Job files the report left out, named so a reviewer knows they are there. */
function skipped(model: ReportModel): Html | '' {
  const n = model.skipped.length;
  if (n === 0) return '';
  const shown = model.skipped.slice(0, MAX_PATHS);
  return html`<p class="note bad" id="skipped">${n} job file(s) not shown: not named by a key, so no job genjob minted: ${shown.map((f, i) => html`${i > 0 ? ', ' : ''}<span class="mono">${f}</span>`)}${n > MAX_PATHS ? ` and ${n - MAX_PATHS} more` : ''}</p>`;
}

function select(id: string, label: string, values: readonly string[]): Html {
  return html`<label>${label}<select id="${id}"><option value="">all</option>${values.map((v) => html`<option value="${v}">${v}</option>`)}</select></label>`;
}

/** `undrawn`: the jobs whose pages could not be drawn, and why (their rows say so). */
export function renderIndex(
  model: ReportModel,
  assets: Assets,
  fingerprint: string,
  undrawn: ReadonlyMap<string, string> = new Map(),
): string {
  const states = STATE_ORDER.filter((s) => model.jobs.some((j) => j.state === s));
  const statuses = [...new Set(model.jobs.map(statusOf))].sort();
  const verdicts = model.checkers.length > 0 ? [...CHECK_VERDICTS, 'stale'] : [];
  // a filter for hidden characters only when some job adds them
  const hidden = model.jobs.some((j) => jobHiddenAdded(j) > 0);
  const times = model.jobs.flatMap((j) => (j.receipt?.generateMs == null ? [] : [j.receipt.generateMs]));
  // a numeric column sorts by number; it is right-aligned unless its numbers are only an order (state)
  const column = (label: string, type: 'num' | 'text' = 'text', right = type === 'num') =>
    html`<th scope="col" data-type="${type}"${right ? html` class="num"` : ''}><button type="button">${label}</button></th>`;
  const body = html`<h1>genjob report: ${model.title}</h1>
<p class="sub">${model.jobs.length} job(s)${model.checkers.length ? html` &middot; checkers: ${model.checkers.join(', ')}` : ''}${model.planes.length ? html` &middot; shadow planes: ${model.planes.join(', ')}` : ''}</p>
${counts(model)}
<div class="panels">
<section><h2>Gate</h2>${gate(model)}</section>
<section class="p-spend"><h2>Tokens and cost</h2>${spend(model)}</section>
<section class="p-time"><h2>Time per job</h2>${histogram(times)}</section>
</div>
<h2>Jobs</h2>
${skipped(model)}
<div class="filters">${select('f-state', 'state', states)}${select('f-status', 'status', statuses)}${verdicts.length ? select('f-verdict', 'check verdict', verdicts) : ''}${hidden ? select('f-hidden', 'hidden characters', ['added', 'none']) : ''}<span class="muted" role="status"><span id="shown">${model.jobs.length}</span> of ${model.jobs.length} shown</span></div>
<div class="jobs-wrap"><table class="jobs" id="jobs">
<thead><tr>${column('key')}${column('state', 'num', false)}${column('status')}${column('paths')}${column('generator')}${column('epoch', 'num')}${column('host')}${column('signer')}${column('sandbox')}${column('tokens', 'num')}${column('time', 'num')}${model.checkers.map((c) => column(c))}${model.planes.map((p) => column(p))}</tr></thead>
<tbody>
${model.jobs.map((j) => row(j, model, undrawn.get(j.key)))}
</tbody>
</table></div>`;
  return renderPage({ title: `genjob report: ${model.title}`, body, assets, script: true, fingerprint });
}
