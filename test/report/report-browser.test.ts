// The report in a real browser (chromium, headless): the index of a fixture run lists every job with
// the right check cells, the gate and the spend; filtering by a verdict leaves exactly its rows and the
// columns sort in place; a job page shows the lines its output changed; nothing logs an error, fails
// to load or reaches off the disk. Screenshots of the index and a job page are kept for a reviewer
// (their paths are printed). For a keyboard and a screen reader: each diff table is named by its
// caption, each view's toggle is reached and worked by keys with its focus drawn, every text drawn
// reads at 4.5:1 on what is under it, and with the stylesheet off the side-by-side view still says which
// lines were removed and added.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckFacts } from '../../src/check/record.js';
import type { Outcome } from '../../src/check/verdict.js';
import { checkReader } from '../../src/commands/gate.js';
import { userSecret } from '../../src/remote/cache-mac.js';
import { loadAssets } from '../../src/report/assets.js';
import { checkSource } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import type { ReportCheck } from '../../src/report/model.js';
import { readRun } from '../../src/report/run-source.js';
import { writeReport } from '../../src/report/write-report.js';
import { checkRecords } from '../helpers/check-record.js';
import { commitAll } from '../helpers/commit-all.js';
import { CLEAN, clean, launchChromium, open, type Watched, watchedPage } from './browser.js';
import { contrast } from './contrast-ratio.js';
import { type FixtureJob, fixtureRepo, inputText } from './fixture.js';
import { closeGate, sealRun } from './run-files.js';

let ctx: BrowserContext;
/** The suite's temp dir: the report and the browser profile, kept until the browser is closed. */
let suiteDir: string;
let index: string;
let jobs: FixtureJob[];
/** Per job i: the attempts of its tests record (none: no record) and of its lint record. */
const TESTS: Array<[ReportCheck['verdict'], Outcome[], Partial<CheckFacts>?]> = [
  ['pass', ['pass']],
  ['fail', ['fail']],
  ['flaky', ['fail', 'pass']],
  ['pass', ['pass'], { receipt_sha256: 'e'.repeat(64) }], // made for another receipt: stale
  ['fail', ['fail']],
  ['missing', []],
];
const LINT: Array<[ReportCheck['verdict'], Outcome[]]> = [
  ['pass', ['pass']],
  ['pass', ['pass']],
  ['error', ['error']],
  ['pass', ['pass']],
  ['missing', []],
  ['missing', []],
];

beforeAll(async () => {
  const made = fixtureRepo(6, {
    instruction: (i) => `Add type hints to src/m${i}.txt; keep behaviour`,
    // job 2 drops a line's CR as it changes it: a marked CR inside a removed word (the colour test's pair)
    before: (i) =>
      i === 2 ? inputText(2).replace('line 4 of module 2\n', 'line 4 of module 2\r\n') : inputText(i),
    after: (i) => inputText(i).replace(`line 4 of module ${i}`, `line 4 of module ${i}, changed`),
    receipt: (i) => ({
      generator: { command: i % 2 === 0 ? 'builtin:openai' : './gen.sh', version: null },
      worker: { id: `worker-${i % 3}`, host: i % 2 === 0 ? 'gpu-a.lan' : 'gpu-b.lan' },
      sandbox: { kind: 'bwrap', network: false },
      usage: { prompt_tokens: 1000 + i, completion_tokens: 200, requests: 1 },
      timings: {
        started_at: '2026-11-30T09:00:00.000Z',
        finished_at: '2026-11-30T09:00:15.000Z',
        generate_ms: [4200, 900, 15000, 2500, 700, 6100][i],
      },
    }),
  });
  jobs = made.jobs;
  // the run sealed and its gate closed over the receipts (`genjob gate --run fixture`) before the retry
  // below: the record stands, stale
  await sealRun(
    made.store,
    'fixture',
    jobs.map((j) => j.key),
  );
  await closeGate(made.root, 'fixture', { requireCheck: [], minPass: '100%' });
  // one job back in the queue, as a retry leaves it (its old receipt stays where it was)
  renameSync(
    made.store.layout.jobFile('received', jobs[5]!.key),
    made.store.layout.jobFile('queue', jobs[5]!.key),
  );
  // the checks plane's records, as `genjob check` writes them
  writeFileSync(
    join(made.root, 'genjob.config.json'),
    JSON.stringify({ checkers: { tests: { run: 'true' }, lint: { run: 'true' } } }),
  );
  const record = await checkRecords(made.root, made.store, await commitAll(made.root));
  for (const [i, j] of jobs.entries()) {
    const [, tests, over] = TESTS[i]!;
    if (tests.length)
      record(
        j.key,
        'tests',
        tests.map((outcome) => ({ outcome })),
        over,
      );
    const [, lint] = LINT[i]!;
    if (lint.length)
      record(
        j.key,
        'lint',
        lint.map((outcome) => ({ outcome })),
      );
  }
  const run = await readRun(made.store, 'fixture', checkReader, await userSecret());
  const model = await gatherReport(made.store, {
    run,
    checks: await checkSource(made.root),
    env: { GENJOB_PRICE_IN: '2', GENJOB_PRICE_OUT: '8' },
  });
  suiteDir = mkdtempSync(join(tmpdir(), 'genjob-report-browser-'));
  index = (await writeReport(made.store, model, join(suiteDir, 'report'), loadAssets())).index;
  ctx = await launchChromium(suiteDir);
});

afterAll(async () => {
  await ctx?.close();
  if (suiteDir) rmSync(suiteDir, { recursive: true, force: true });
});

describe('the report in chromium', () => {
  it('lists every job of the run with its check cells, the gate and the spend', async () => {
    const w = await watchedPage(ctx);
    await open(w, index);
    const rows = w.page.locator('#jobs tbody tr');
    await expect.poll(() => rows.count()).toBe(6);
    for (const [i, j] of jobs.entries()) {
      const row = w.page.locator(`#jobs tbody tr:has(a[href="jobs/${j.key}.html"])`);
      const tests = row.locator('td[data-checker="tests"]');
      const [verdict, , more] = TESTS[i]!;
      expect(await tests.locator('.verdict').textContent()).toBe(verdict);
      const marks = { pass: '✓', fail: '✗', flaky: '✗✓', missing: '' }[verdict as 'pass'];
      if (marks) expect(await tests.locator('.marks').textContent()).toBe(marks);
      if (more?.receipt_sha256) expect(await tests.locator('.stale').textContent()).toBe('stale: receipt');
      expect(await row.locator('td[data-checker="lint"] .verdict').textContent()).toBe(LINT[i]![0]);
    }
    expect(await w.page.locator('#gate-state').textContent()).toBe('closed: met');
    expect(await w.page.locator('body').textContent()).toContain('6/6 = 100.0%');
    expect(await w.page.locator('#gate-state + .stale').textContent()).toMatch(/^stale: /);
    expect(await w.page.locator('table.spend').textContent()).toContain('builtin:openai');
    expect(await w.page.locator('svg.hist rect.bar').count()).toBeGreaterThan(0);
    expect(clean(w)).toEqual(CLEAN);
    await w.page.close();
  });

  it('filters the rows by verdict and by state, and sorts by a column, without reloading', async () => {
    const w = await watchedPage(ctx);
    await open(w, index);
    const visibleKeys = () =>
      w.page
        .locator('#jobs tbody tr:visible td:first-child')
        .evaluateAll((tds) => tds.map((td) => td.getAttribute('data-v')));
    await w.page.evaluate(() => {
      (globalThis as unknown as { loadedOnce: boolean }).loadedOnce = true;
    });
    await w.page.selectOption('#f-verdict', 'fail');
    expect((await visibleKeys()).sort()).toEqual([jobs[1]!.key, jobs[4]!.key].sort());
    expect(await w.page.locator('#shown').textContent()).toBe('2');
    await w.page.selectOption('#f-verdict', 'stale');
    expect(await visibleKeys()).toEqual([jobs[3]!.key]);
    await w.page.selectOption('#f-verdict', '');
    expect(await visibleKeys()).toHaveLength(6);
    await w.page.selectOption('#f-state', 'queue');
    expect(await visibleKeys()).toEqual([jobs[5]!.key]);
    await w.page.selectOption('#f-state', 'received');
    // a row matches a verdict when any of its checkers has it (job 1: tests fail, lint pass)
    await w.page.selectOption('#f-verdict', 'pass');
    expect((await visibleKeys()).sort()).toEqual([0, 1, 3].map((i) => jobs[i]!.key).sort());
    await w.page.selectOption('#f-state', '');
    await w.page.selectOption('#f-verdict', '');
    // time: 4200 900 15000 2500 700 6100 ms
    await w.page.locator('#jobs thead th', { hasText: 'time' }).locator('button').click();
    expect(await visibleKeys()).toEqual([4, 1, 3, 0, 5, 2].map((i) => jobs[i]!.key));
    await w.page.locator('#jobs thead th', { hasText: 'time' }).locator('button').click();
    expect(await visibleKeys()).toEqual([2, 5, 0, 3, 1, 4].map((i) => jobs[i]!.key));
    // still the same document: nothing reloaded
    expect(await w.page.evaluate(() => (globalThis as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(
      true,
    );
    expect(clean(w)).toEqual(CLEAN);
    await w.page.close();
  });

  it('opens a job page from the index that shows the lines its output changed', async () => {
    const w = await watchedPage(ctx);
    await open(w, index);
    const shots = mkdtempSync(join(tmpdir(), 'genjob-report-screenshots-'));
    await w.page.screenshot({ path: join(shots, 'index.png'), fullPage: true });
    const j = jobs[1]!;
    await w.page.locator(`a[href="jobs/${j.key}.html"]`).click();
    await w.page.waitForURL(`**/jobs/${j.key}.html`);
    const split = w.page.locator('table.diff.split').first();
    expect(await split.locator('td.del').allTextContents()).toContain('line 4 of module 1');
    expect(await split.locator('td.add').allTextContents()).toContain('line 4 of module 1, changed');
    expect(await split.locator('td.add ins').first().textContent()).toBe(', changed');
    // the unified view holds the same lines, one column
    await w.page.locator('summary', { hasText: 'unified' }).first().click();
    const unified = w.page.locator('table.diff.unified').first();
    expect(await unified.locator('td.sign.del').count()).toBe(1);
    expect(await unified.locator('td.sign.add').count()).toBe(1);
    expect(await w.page.locator('h2', { hasText: 'Checks' }).count()).toBe(1);
    await w.page.screenshot({ path: join(shots, 'job.png'), fullPage: true });
    process.stdout.write(`report screenshots: ${join(shots, 'index.png')} ${join(shots, 'job.png')}\n`);
    expect(clean(w)).toEqual(CLEAN);
    await w.page.close();
  });

  it('names each diff table by its caption, and a keyboard reaches and works each view’s toggle, its focus drawn', async () => {
    const w = await watchedPage(ctx);
    const j = jobs[1]!;
    await open(w, join(suiteDir, 'report', 'jobs', `${j.key}.html`));
    const page = w.page;
    // the names a screen reader hears, as chromium's accessibility tree computes them
    const split = page.getByRole('table', {
      name: `${j.path}: before (left) and after (right), side by side`,
    });
    expect(await split.count()).toBe(1);
    expect(await split.getByRole('columnheader', { name: 'after' }).count()).toBe(1);
    expect(await page.getByRole('main').count()).toBe(1);
    expect(await page.getByRole('navigation').getByRole('link', { name: 'all jobs' }).count()).toBe(1);
    expect(await page.getByRole('heading', { level: 3, name: new RegExp(`^${j.path}`) }).count()).toBe(1);
    // Tab to the unified view's toggle, then open it with Enter
    const toggle = page.locator('summary', { hasText: 'unified' }).first();
    expect(await toggle.textContent()).toBe(`unified diff of ${j.path}`);
    let tabs = 0;
    while (!(await toggle.evaluate((el) => el === el.ownerDocument.activeElement))) {
      await page.keyboard.press('Tab');
      expect(++tabs).toBeLessThan(50);
    }
    const ring = await toggle.evaluate((el) => {
      const s = el.ownerDocument.defaultView!.getComputedStyle(el);
      return { style: s.outlineStyle, width: s.outlineWidth };
    });
    expect(ring).toEqual({ style: 'solid', width: '2px' });
    const unified = page.getByRole('table', { name: `${j.path}: before to after, unified` });
    expect(await unified.isVisible()).toBe(false);
    await page.keyboard.press('Enter');
    await expect.poll(() => unified.isVisible()).toBe(true);
    expect(clean(w)).toEqual(CLEAN);
    await page.close();
  });

  /**
   * Each element's text that is drawn, its colour and the colour under it (the nearest opaque background).
   * Run in the page as a string: this project's types hold no DOM.
   */
  const DRAWN_COLOURS = `(() => {
    const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
    const out = [];
    for (const el of document.body.querySelectorAll('*')) {
      if (el instanceof SVGElement) continue; // the histogram's text is filled, not coloured (contrast.test.ts)
      const own = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
      if (!own || !el.checkVisibility()) continue;
      let bg = [255, 255, 255];
      for (let under = el; under; under = under.parentElement) {
        const c = rgb(getComputedStyle(under).backgroundColor);
        if (c.length === 3 || c[3] > 0) {
          bg = c.slice(0, 3);
          break;
        }
      }
      const what = el.tagName.toLowerCase() + '.' + el.className + ': ' + el.textContent.slice(0, 40);
      out.push({ what, fg: rgb(getComputedStyle(el).color).slice(0, 3), bg });
    }
    return out;
  })()`;
  type Drawn = { what: string; fg: [number, number, number]; bg: [number, number, number] };
  const drawnColours = (w: Watched) => w.page.evaluate<Drawn[]>(DRAWN_COLOURS);

  it('draws every text at 4.5:1 or more against what is under it, on the index and on a job page with both views open', async () => {
    const w = await watchedPage(ctx);
    await open(w, index);
    const drawn = await drawnColours(w);
    for (const j of [jobs[1]!, jobs[2]!]) {
      await w.page.goto(`file://${join(suiteDir, 'report', 'jobs', `${j.key}.html`)}`);
      await w.page.locator('summary', { hasText: 'unified' }).first().click();
      drawn.push(...(await drawnColours(w)));
    }
    // job 2's removed CR is drawn, marked, inside the removed word
    expect(drawn.filter((d) => d.what.startsWith('span.cr-char')).length).toBeGreaterThan(0);
    expect(drawn.length).toBeGreaterThan(100);
    const low = drawn.flatMap((d) => {
      const r = contrast(d.fg, d.bg);
      return r < 4.5 ? [`${d.what} (${r.toFixed(2)})`] : [];
    });
    expect(low).toEqual([]);
    expect(clean(w)).toEqual(CLEAN);
    await w.page.close();
  });

  it('with its stylesheet off, a job page still says which lines were removed and which added', async () => {
    const w = await watchedPage(ctx);
    const j = jobs[1]!;
    await open(w, join(suiteDir, 'report', 'jobs', `${j.key}.html`));
    await w.page.locator('style').evaluateAll((styles) => {
      for (const style of styles) style.remove();
    });
    // the rows as a reader sees them: no colour, no hidden text, only what is drawn
    const rows = (await w.page.locator('table.diff.split tbody tr').allInnerTexts()).map((r) =>
      r.replace(/\s+/g, ' ').trim(),
    );
    const removed = rows.filter((r) => r.includes('line 4 of module 1') && !r.includes('changed'));
    expect(removed).toHaveLength(0); // the removed line is paired with the one that replaced it
    const pair = rows.find((r) => r.includes('line 4 of module 1, changed'))!;
    expect(pair).toMatch(/^4 -\s?removed line 4 of module 1 4 \+\s?added line 4 of module 1, changed$/);
    const context = rows.find((r) => r.startsWith('3 '))!;
    expect(context).not.toMatch(/removed|added/);
    expect((await w.page.locator('table.diff.split caption').allInnerTexts())[0]).toBe(
      `${j.path}: before (left) and after (right), side by side`,
    );
    expect(clean(w)).toEqual(CLEAN);
    await w.page.close();
  });
});
