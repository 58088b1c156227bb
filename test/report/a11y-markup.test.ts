// The report's pages as a screen reader and a keyboard meet them (WCAG 2.1 AA basics), read from the
// markup the renderers write: a language, one <main> (and the way back in a <nav> outside it), headings
// that never skip a level, every table header cell scoped, every diff table captioned with its path,
// link texts that name their own target (two links that read the same go to the same page), a name for
// each view's toggle that says which file it opens, and the filters' count announced as a status.
import { describe, expect, it } from 'vitest';
import { loadAssets } from '../../src/report/assets.js';
import { diffView } from '../../src/report/diff-view.js';
import type { ReportJob, ReportModel } from '../../src/report/model.js';
import { renderUndrawn } from '../../src/report/page.js';
import { renderIndex } from '../../src/report/render-index.js';
import { type JobPageBytes, renderJob } from '../../src/report/render-job.js';
import { renderLog } from '../../src/report/render-log.js';
import { check, modelJob, modelReceipt } from './fixture.js';

const b = (s: string) => Buffer.from(s);
const LOG_A = 'a'.repeat(64);
const LOG_B = 'b'.repeat(64);

/** A job with two outputs, two checkers of two attempts each, a judge and a shadow plane that differs. */
function richJob(): { job: ReportJob; bytes: JobPageBytes } {
  const job = modelJob('c', {
    inputs: [
      { path: 'src/one.ts', sha256: '1'.repeat(64) },
      { path: 'src/two.ts', sha256: '2'.repeat(64) },
    ],
    receipt: modelReceipt({ usage: { prompt: 10, completion: 5, requests: 1 } }),
    files: ['src/one.ts', 'src/two.ts'].map((path, n) => ({
      path,
      sha256: `${n + 3}`.repeat(64),
      bytes: 'ok' as const,
      input: `${n + 1}`.repeat(64),
      inputFound: true,
      hiddenAdded: 0,
    })),
    checks: [
      check('tests', 'flaky', {
        attempts: [
          { exit: 1, ms: 10, log: LOG_A },
          { exit: 0, ms: 12, log: LOG_B },
        ],
      }),
      check('lint', 'pass', { attempts: [{ exit: 0, ms: 3, log: LOG_B }] }),
      check('review', 'pass', { judge: [{ pass: true, score: 0.9, reason: 'fine' }] }),
    ],
    shadows: [
      {
        plane: 'shadow:next',
        verdict: 'differs',
        digest: 'f'.repeat(64),
        status: 'ok',
        generator: 'g2',
        reason: null,
        tokens: 7,
        files: [{ path: 'src/one.ts', live: '3'.repeat(64), shadow: '9'.repeat(64) }],
      },
    ],
  });
  const out = (path: string) => ({ path, old: 'before', new: 'after' });
  const bytes: JobPageBytes = {
    diffs: new Map([
      ['src/one.ts', diffView(b('a\nb\n'), b('a\nB\n'), out('src/one.ts'))],
      ['src/two.ts', diffView(b('x\n'), b('x\ny\n'), out('src/two.ts'))],
    ]),
    logTails: new Map([
      [LOG_A, 'FAILED'],
      [LOG_B, 'ok'],
    ]),
    shadowDiffs: new Map([
      [
        'shadow:next',
        new Map([
          [
            'src/one.ts',
            diffView(b('a\nB\n'), b('a\nC\n'), { path: 'src/one.ts', old: 'live', new: 'shadow:next' }),
          ],
        ]),
      ],
    ]),
  };
  return { job, bytes };
}

function indexPage(): string {
  const { job } = richJob();
  const model: ReportModel = {
    title: 'all jobs',
    run: null,
    checkers: ['tests', 'lint'],
    planes: ['shadow:next'],
    jobs: [job, modelJob('d', { receipt: modelReceipt() })],
    spend: [{ generator: 'g', mode: 'interactive', prompt: 10, completion: 5, requests: 1, cost: 0.5 }],
    skipped: [],
  };
  return renderIndex(model, loadAssets(), '0'.repeat(64));
}

function jobPage(): string {
  const { job, bytes } = richJob();
  return renderJob(job, bytes, loadAssets(), '0'.repeat(64));
}

const PAGES: Array<[string, () => string]> = [
  ['the index', indexPage],
  ['a job page', jobPage],
  ['a log page', () => renderLog(LOG_A, { kind: 'ok', bytes: b('line\n') }, loadAssets(), '0'.repeat(64))],
  [
    'an undrawn page',
    () =>
      renderUndrawn({
        title: 'genjob job cccc',
        why: 'a bug',
        assets: loadAssets(),
        fingerprint: '0'.repeat(64),
      }),
  ],
];

/** Text as a screen reader gets it: what is aria-hidden dropped, tags dropped (visually hidden text kept). */
const text = (markup: string) =>
  markup
    .replace(/<span aria-hidden="true">[^<]*<\/span>/g, '')
    .replace(/<[^>]*>/g, '')
    .trim();

describe('the report pages, for a screen reader and a keyboard', () => {
  it.each(PAGES)('%s: a language, one <main>, and its way back in a <nav> before it', (_, page) => {
    const p = page();
    expect(p).toMatch(/<html lang="en">/);
    expect(p.match(/<main>/g)).toHaveLength(1);
    expect(p.match(/<\/main>/g)).toHaveLength(1);
    const main = p.slice(p.indexOf('<main>'), p.indexOf('</main>'));
    // everything the body shows is inside <main> or the <nav>: nothing stands beside them
    const body = p.slice(p.indexOf('<body>') + 6, p.indexOf('</body>'));
    const outside = body.replace(/<main>[\s\S]*<\/main>/, '').replace(/<nav\b[\s\S]*?<\/nav>/g, '');
    expect(outside.replace(/<script>[\s\S]*?<\/script>/, '').trim()).toBe('');
    expect(main).not.toContain('<nav');
    if (!p.includes('<title>genjob report')) {
      expect(body.indexOf('<nav')).toBeLessThan(body.indexOf('<main>'));
      expect(text(/<nav\b[\s\S]*?<\/nav>/.exec(p)![0])).toBe('all jobs');
    }
  });

  it.each(PAGES)('%s: one h1, and no heading skips a level', (_, page) => {
    const levels = [...page().matchAll(/<h([1-6])\b/g)].map((m) => Number(m[1]));
    expect(levels[0]).toBe(1);
    expect(levels.filter((l) => l === 1)).toHaveLength(1);
    for (let i = 1; i < levels.length; i++) expect(levels[i]! - levels[i - 1]!).toBeLessThanOrEqual(1);
  });

  it.each(PAGES)('%s: every table header cell says what it heads (scope)', (_, page) => {
    const p = page();
    const th = [...p.matchAll(/<th\b[^>]*>/g)].map((m) => m[0]);
    for (const cell of th) expect(cell).toMatch(/ scope="(col|row)"/);
  });

  it('a job page: each file is a heading, and each diff table and toggle names the file it shows', () => {
    const p = jobPage();
    expect(p).toContain('<h3 class="file-head"><span class="mono">src/one.ts</span>');
    expect(p).toContain('<h3 class="file-head"><span class="mono">src/two.ts</span>');
    expect(p).toContain('<h4 class="file-head"><span class="mono">src/one.ts</span>');
    const tables = [...p.matchAll(/<table class="diff (split|unified)">(.*?)<\/table>/g)];
    expect(tables).toHaveLength(6);
    const captions = tables.map((t) => /^<caption class="vh">([^<]*)<\/caption>/.exec(t[2]!)?.[1]);
    expect(captions).toEqual([
      'src/one.ts: before (left) and after (right), side by side',
      'src/one.ts: before to after, unified',
      'src/two.ts: before (left) and after (right), side by side',
      'src/two.ts: before to after, unified',
      'src/one.ts: live (left) and shadow:next (right), side by side',
      'src/one.ts: live to shadow:next, unified',
    ]);
    const toggles = [...p.matchAll(/<summary>(.*?)<\/summary>/g)].map((m) => text(m[1]!));
    expect(toggles).toEqual([
      'side by side diff of src/one.ts',
      'unified diff of src/one.ts',
      'side by side diff of src/two.ts',
      'unified diff of src/two.ts',
      'side by side diff of src/one.ts',
      'unified diff of src/one.ts',
    ]);
  });

  it.each(PAGES)('%s: links that read the same lead to the same page', (_, page) => {
    const targets = new Map<string, Set<string>>();
    for (const m of page().matchAll(/<a\b([^>]*)>(.*?)<\/a>/g)) {
      const href = / href="([^"]*)"/.exec(m[1]!)![1]!;
      // a link's name: its aria-label, else its text
      const name = / aria-label="([^"]*)"/.exec(m[1]!)?.[1] ?? text(m[2]!);
      expect(name).not.toBe('');
      targets.set(name, (targets.get(name) ?? new Set()).add(href));
    }
    for (const [name, hrefs] of targets) expect([name, hrefs.size]).toEqual([name, 1]);
  });

  it('a job page: each log link names its checker and attempt; a log tail that scrolls can be reached by keyboard', () => {
    const p = jobPage();
    const links = [...p.matchAll(/<a href="\.\.\/logs\/[^"]*">(.*?)<\/a>/g)].map((m) => text(m[1]!));
    expect(links).toEqual([
      'full log of tests, attempt 1',
      'full log of tests, attempt 2',
      'full log of lint, attempt 1',
    ]);
    const tails = [...p.matchAll(/<pre class="log"([^>]*)>/g)].map((m) => m[1]);
    expect(tails).toHaveLength(3);
    for (const t of tails) expect(t).toMatch(/^ tabindex="0" role="region" aria-label="[^"]+"$/);
  });

  it('the index: a job link says it is a job, and the filters’ count is a status a screen reader hears', () => {
    const p = indexPage();
    // named "job 3fa9c2…": its visible key, so a voice command that says the key still finds it
    expect(p).toContain(
      `<a class="mono" href="jobs/${'c'.repeat(64)}.html" aria-label="job ${'c'.repeat(12)}">${'c'.repeat(12)}</a>`,
    );
    expect(p).toMatch(/<span class="muted" role="status"><span id="shown">2<\/span> of 2 shown<\/span>/);
    // each sort control is a button named by its column
    const heads = [...p.matchAll(/<th scope="col"[^>]*><button type="button">([^<]*)<\/button><\/th>/g)];
    expect(heads.map((m) => m[1])).toContain('time');
  });
});
