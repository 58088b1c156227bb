// The index from a model (pure): each row carries the words its filters match (state, status, every
// checker's verdict and `stale`), a missing record is a `missing` cell, a shadow plane gets a column, the
// gate says open or closed, and the page ends with its fingerprint line.
import { describe, expect, it } from 'vitest';
import { loadAssets } from '../../src/report/assets.js';
import type { ReportJob, ReportModel } from '../../src/report/model.js';
import { fingerprintLine } from '../../src/report/page.js';
import { renderIndex } from '../../src/report/render-index.js';
import { check, modelJob, modelReceipt } from './fixture.js';

const job = modelJob;

const model = (jobs: ReportJob[], more: Partial<ReportModel> = {}): ReportModel => ({
  title: 'all jobs',
  run: null,
  checkers: ['tests'],
  planes: [],
  jobs,
  spend: [],
  skipped: [],
  ...more,
});

const rows = (page: string) =>
  [...page.matchAll(/<tr data-state="([^"]*)" data-status="([^"]*)" data-verdicts="([^"]*)"/g)].map((m) =>
    m.slice(1),
  );

describe('renderIndex', () => {
  it('forged: marks a row whose receipt does not decode, or is unreadable, and counts them', () => {
    const page = renderIndex(
      model([
        job('a', { receipt: modelReceipt(), receiptProblem: 'bad epoch' }),
        job('b', { receiptProblem: 'not a readable receipt (bad JSON)' }),
        job('c', { receipt: modelReceipt() }),
      ]),
      loadAssets(),
      '0'.repeat(64),
    );
    const row = (k: string) => page.slice(page.indexOf(`jobs/${k.repeat(64)}.html`)).split('</tr>')[0]!;
    expect(row('a')).toContain('<span class="row-problem" title="bad epoch">does not decode</span>');
    expect(row('b')).toContain('data-v="unreadable"><span class="state s-unreadable">unreadable</span>');
    expect(row('c')).not.toContain('row-problem');
    expect(page).toContain(
      '<div class="n">2</div><div class="l">receipts that do not decode<br>what they claim is not vouched for</div>',
    );
  });

  it('gives each row the words its filters match', () => {
    const page = renderIndex(
      model([
        job('a', { checks: [check('tests', 'pass', { current: false, stale: 'base' })] }),
        job('b', { state: 'dead', dead: { code: 'EGJ_DROPPED', reason: 'no' } }),
        job('c', { checks: [check('tests', 'flaky')] }),
      ]),
      loadAssets(),
      '0'.repeat(64),
    );
    expect(rows(page)).toEqual([
      ['received', 'none', 'pass stale'],
      ['dead', 'dead', 'missing'],
      ['received', 'none', 'flaky'],
    ]);
    expect(page).toContain('<span class="stale">stale: base</span>');
    expect(page.endsWith(fingerprintLine('0'.repeat(64)))).toBe(true);
  });

  it('is ASCII when the stored text is: its own characters beyond ASCII are written as entities', () => {
    // one character outside Latin-1 makes V8 hold the whole page (~0.8 MB for 1,000 jobs) as UTF-16
    const receipt = modelReceipt({ generateMs: 1200, usage: { prompt: 3, completion: 4, requests: 1 } });
    const page = renderIndex(
      model([job('a', { receipt, instruction: 'x'.repeat(120) }), job('b', { receipt })], {
        planes: ['shadow:alt'],
      }),
      loadAssets(),
      '4'.repeat(64),
    );
    // the received card's breakdown, the checkers and planes line, a histogram bar's range, a cut instruction
    expect(page).toContain('ok 2 &middot; aborted 0 &middot; rejected 0');
    expect(page).toContain(' &middot; checkers: tests &middot; shadow planes: shadow:alt');
    expect(page).toMatch(/<title>[^<]* &ndash; [^<]*: 2 job\(s\)<\/title>/);
    expect(page).toContain(`${'x'.repeat(89)}&hellip;`);
    expect(page.match(/[^\x00-\x7f]/g)).toBeNull();
  });

  it('offers no verdict filter when no checker is declared or recorded', () => {
    const page = renderIndex(model([job('a')], { checkers: [] }), loadAssets(), '1'.repeat(64));
    expect(page).not.toContain('id="f-verdict"');
    expect(rows(page)).toEqual([['received', 'none', '']]);
  });

  it('draws a column per shadow plane with its compare verdict', () => {
    const shadow = {
      plane: 'shadow:alt',
      verdict: 'differs' as const,
      digest: null,
      status: 'ok',
      generator: null,
      reason: null,
      tokens: 0,
      files: [],
    };
    const page = renderIndex(
      model([job('a', { shadows: [shadow] })], { planes: ['shadow:alt'] }),
      loadAssets(),
      '2'.repeat(64),
    );
    expect(page).toContain('<button type="button">shadow:alt</button>');
    expect(page).toContain(
      '<td class="shadow" data-v="differs"><span class="verdict v-differs">differs</span></td>',
    );
  });

  it('says a run whose gate never closed has no record yet', () => {
    const run = { name: 'hints', keys: ['a'.repeat(64)], sealed: true, gate: null };
    const page = renderIndex(model([job('a')], { run, title: 'run hints' }), loadAssets(), '3'.repeat(64));
    expect(page).toContain(
      '<p>Run <b>hints</b>: 1 intended job(s); no gate record yet (<code>genjob gate --run hints</code> writes one when the gate closes).</p>',
    );
    expect(page).not.toContain('id="gate-state"');
    const foreign = { ...run, sealed: false };
    expect(
      renderIndex(model([job('a')], { run: foreign, title: 'run hints' }), loadAssets(), '3'.repeat(64)),
    ).toContain(
      'writes one when the gate closes). <span class="stale" id="run-unsealed">not minted by your genjob: gate and apply refuse this run until your own mint of it seals it</span></p>',
    );
  });

  it('shows a closed gate as its record says (verdict, rate, policy, file, digest, signed) and says when it is stale', () => {
    const gate = {
      met: false,
      passed: 1,
      total: 2,
      rate: '1/2 = 50.0%',
      policy: 'min 100.0%, checks tests',
      file: '.gen/runs/hints.gates/2.json',
      recordDigest: 'f'.repeat(64),
      signed: true,
      stale: false,
      sealed: true,
    };
    const run = { name: 'hints', keys: ['a'.repeat(64), 'b'.repeat(64)], sealed: true, gate };
    const page = renderIndex(model([job('a')], { run, title: 'run hints' }), loadAssets(), '4'.repeat(64));
    expect(page).toContain('<b class="gate-notmet" id="gate-state">closed: not met</b></td>');
    expect(page).toContain('<td>1/2 = 50.0%</td>');
    expect(page).toContain('<td>min 100.0%, checks tests</td>');
    expect(page).toContain(`.gen/runs/hints.gates/2.json (signed)<br>sha256:${'f'.repeat(64)}`);
    const stale = { ...run, gate: { ...gate, met: true, signed: false, stale: true } };
    const again = renderIndex(
      model([job('a')], { run: stale, title: 'run hints' }),
      loadAssets(),
      '4'.repeat(64),
    );
    expect(again).toContain(
      '<b class="gate-closed" id="gate-state">closed: met</b> <span class="stale">stale: its evidence changed since</span>',
    );
    expect(again).toContain(`.gen/runs/hints.gates/2.json<br>sha256:`);
    expect(page).not.toContain('gate-unsealed');
    expect(page).not.toContain('run-unsealed');
    expect(
      renderIndex(
        model([job('a')], { run: { ...run, sealed: false }, title: 'run hints' }),
        loadAssets(),
        '4',
      ),
    ).toContain(
      '<td>hints (2 intended job(s)) <span class="stale" id="run-unsealed">not minted by your genjob',
    );
    const foreign = { ...run, gate: { ...gate, sealed: false } };
    expect(
      renderIndex(model([job('a')], { run: foreign, title: 'run hints' }), loadAssets(), '4'.repeat(64)),
    ).toContain(
      '</b> <span class="stale" id="gate-unsealed">not decided by your genjob gate: its policy is the record\'s own, and apply --gated refuses it</span>',
    );
  });
});
