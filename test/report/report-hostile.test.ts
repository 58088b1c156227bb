// Hostile text in a report runs nothing and shows as itself. An instruction, a generated diff, a
// generator's stderr (the receipt's reason), a host's name, a judge's reason and a check log each carry
// a <script>, an onerror= attribute and a javascript: link that call a hook in the page; the report of
// them (the built CLI's, and one with checks) is opened in chromium: the hook is never called and the
// text reads literally. The payloads are shown to be live (a page without genjob's escaping runs them),
// and genjob's CSP alone stops them too (a page whose escaping is broken on purpose runs nothing).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonical, sha256 } from '../../bench/fixtures.mjs';
import { loadAssets } from '../../src/report/assets.js';
import { checkSource } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import { writeReport } from '../../src/report/write-report.js';
import { Store } from '../../src/store/store.js';
import { makeSandbox, mintKey } from '../e2e/helpers.js';
import { checkRecords } from '../helpers/check-record.js';
import { commitAll } from '../helpers/commit-all.js';
import { CLEAN, clean, launchChromium, open, type Watched, watchedPage } from './browser.js';
import { fixtureRepo } from './fixture.js';

/** Three ways to run script, each calling the hook with `where`. */
function payload(where: string): string {
  return [
    `<script>genjobPwned('${where}-script')</script>`,
    `<img src=x onerror="genjobPwned('${where}-onerror')">`,
    `<a href="javascript:genjobPwned('${where}-link')">click ${where}</a>`,
  ].join(' ');
}

const INSTRUCTION = `Tidy the README ${payload('instruction')}`;
const FAILING = `FAIL on purpose ${payload('instruction2')}`;
const HOST = `evil-host ${payload('host')}`;
/** A file name is anything but NUL and a slash: markup fits. */
const PATH = `<img src=x onerror="genjobPwned('path')">.md`;

let ctx: BrowserContext;
let suiteDir: string;

beforeAll(async () => {
  suiteDir = mkdtempSync(join(tmpdir(), 'genjob-report-hostile-'));
  ctx = await launchChromium(suiteDir);
});

afterAll(async () => {
  await ctx?.close();
  if (suiteDir) rmSync(suiteDir, { recursive: true, force: true });
});

/** The page holds no element that could run script: only genjob's own script, no handler, no javascript: link. */
async function inert(w: Watched, scripts: number): Promise<void> {
  const found = await w.page.evaluate(() => {
    const d = (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } })
      .document;
    return {
      scripts: d.querySelectorAll('script').length,
      handlers: d.querySelectorAll('[onerror], [onload], [onclick]').length,
      links: d.querySelectorAll('a[href^="javascript:"]').length,
      images: d.querySelectorAll('img').length,
    };
  });
  expect(found).toEqual({ scripts, handlers: 0, links: 0, images: 0 });
}

async function text(w: Watched, selector: string): Promise<string> {
  return (await w.page.locator(selector).first().textContent()) ?? '';
}

describe('a report of hostile text', () => {
  it('shows what a generator, a host and the instruction wrote as text and runs none of it (built CLI)', async () => {
    const sb = await makeSandbox();
    const gen = sb.script(
      'hostile.sh',
      [
        'case "$GENJOB_INSTRUCTION" in',
        `  FAIL*) printf '%s\\n' ${JSON.stringify(payload('stderr'))} >&2; exit 1;;`,
        'esac',
        `printf '%s\\n' ${JSON.stringify(payload('diff'))} >> README.md`,
        `printf 'created\\n' > ${JSON.stringify(PATH)}`,
      ].join('\n'),
    );
    const ok = await mintKey(sb, INSTRUCTION, ['README.md'], ['--create', PATH]);
    const failed = await mintKey(sb, FAILING, ['src/user.py']);
    expect((await sb.genjob(['work', '--drain', '--generator', gen])).exitCode).toBe(0);
    // a host that names itself with markup (the receipt is unsigned here, so any host could)
    const store = new Store(sb.repo);
    const receipt = JSON.parse(readFileSync(store.layout.receipt(ok), 'utf8')) as {
      worker: Record<string, string>;
    };
    writeFileSync(
      store.layout.receipt(ok),
      canonical({ ...receipt, worker: { ...receipt.worker, host: HOST } }),
    );

    const r = await sb.genjob(['report', '--json']);
    expect(r.exitCode).toBe(0);
    const index = (JSON.parse(r.stdout) as { index: string }).index;

    const w = await watchedPage(ctx);
    await open(w, index);
    await inert(w, 1);
    // the index shows an instruction's first 89 characters, as text
    expect(await text(w, `a[href="jobs/${failed}.html"] ~ .muted`)).toBe(`${FAILING.slice(0, 89)}…`);
    expect(await w.page.locator('td.paths span', { hasText: 'onerror' }).allTextContents()).toEqual([PATH]);
    await w.page.goto(`file://${join(index, '..', 'jobs', `${ok}.html`)}`);
    await inert(w, 0);
    expect(await text(w, 'pre.instruction')).toBe(INSTRUCTION);
    expect(await w.page.locator('table.diff.split td.add').allTextContents()).toContain(payload('diff'));
    expect(await w.page.getByText(PATH, { exact: true }).count()).toBeGreaterThan(0);
    expect(await w.page.locator('table.facts td', { hasText: 'evil-host' }).first().textContent()).toBe(HOST);
    await w.page.goto(`file://${join(index, '..', 'jobs', `${failed}.html`)}`);
    await inert(w, 0);
    expect(await text(w, 'pre.reason')).toContain(payload('stderr'));
    expect(clean(w)).toEqual(CLEAN);
  });

  it("shows a judge's reasons and a check log, read from real check records, as text and runs none of it", async () => {
    const { root, store, jobs } = fixtureRepo(1);
    const key = jobs[0]!.key;
    writeFileSync(join(root, 'genjob.config.json'), JSON.stringify({ checkers: { tests: { run: 'true' } } }));
    const record = await checkRecords(root, store, await commitAll(root));
    const log = `npm test\n${payload('log')}\nnot ok 1\n`;
    record(key, 'tests', [{ outcome: 'fail', log }]);
    // a judge's answers, as its record keeps them (a checker no longer declared still shows its records)
    record(
      key,
      'review',
      [
        {
          outcome: 'uncertain',
          samples: [
            { index: 0, vote: 'pass', score: 0.9, reason: `Looks fine. ${payload('judge')}`, model: 'm' },
            {
              index: 1,
              vote: 'fail',
              score: null,
              reason: '</pre><script>genjobPwned("judge-pre")</script>',
              model: 'm',
            },
          ],
        },
      ],
      {
        kind: 'judge',
        judge: {
          model: `m ${payload('model')}`,
          samples: 2,
          quorum: 2,
          agreement: '1/2',
          spent: { prompt_tokens: 1, completion_tokens: 1, requests: 2 },
        },
      },
    );
    const checks = await checkSource(root);
    const dir = join(suiteDir, 'judge-report');
    const { index } = await writeReport(store, await gatherReport(store, { checks }), dir, loadAssets());

    const w = await watchedPage(ctx);
    await open(w, index);
    await inert(w, 1);
    await w.page.goto(`file://${join(dir, 'jobs', `${key}.html`)}`);
    await inert(w, 0);
    const reasons = await w.page.locator('table.judge pre.reason').allTextContents();
    expect(reasons).toEqual([
      `Looks fine. ${payload('judge')}`,
      '</pre><script>genjobPwned("judge-pre")</script>',
    ]);
    expect(await text(w, 'pre.log')).toContain(payload('log'));
    await w.page.locator('a', { hasText: 'full log' }).click();
    await w.page.waitForURL(`**/logs/${sha256(Buffer.from(log))}.html`);
    await inert(w, 0);
    expect(await text(w, 'pre.log')).toBe(log);
    expect(clean(w)).toEqual(CLEAN);
  });

  it('shows the hidden characters a generator adds (Trojan Source, tag characters) as code points, with a warning; apply --diff escapes them (built CLI)', async () => {
    const sb = await makeSandbox();
    // the classic Trojan Source line, which a browser draws as `if (role != "user") { // admin only`
    // while a compiler reads the comment as part of the string, then a line of tag characters (text no
    // one sees: "IGNORE") behind a zero-width space; as UTF-8 octal escapes for printf
    const RLO = '\\342\\200\\256';
    const LRI = '\\342\\201\\246';
    const PDI = '\\342\\201\\251';
    const tags = [0x49, 0x47, 0x4e, 0x4f, 0x52, 0x45]
      .map((c) => `\\363\\240\\201\\${(0o200 + (c & 0x3f)).toString(8)}`)
      .join('');
    const gen = sb.script(
      'trojan.sh',
      [
        `printf 'if (role != "user${RLO} ${LRI}// admin only${PDI} ${LRI}") {\\n' >> src/user.py`,
        `printf 'ok = 1 #\\342\\200\\213${tags}\\n' >> src/user.py`,
      ].join('\n'),
    );
    const key = await mintKey(sb, 'Guard the admin path', ['src/user.py']);
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    const added = readFileSync(join(sb.repo, '.gen', 'out', key, 'src', 'user.py'), 'utf8');
    expect(added).toContain('\u202e \u2066// admin only\u2069');
    expect(added).toContain('\u200b\u{e0049}\u{e0047}');

    const r = await sb.genjob(['report', '--json']);
    expect(r.exitCode).toBe(0);
    const index = (JSON.parse(r.stdout) as { index: string }).index;
    const w = await watchedPage(ctx);
    await open(w, index);
    expect(await w.page.locator('td.paths .hidden-added').allTextContents()).toEqual([
      'adds 11 hidden character(s)',
    ]);
    // the index filters by it, in the page
    const rows = () => w.page.locator('#jobs tbody tr:not([hidden])').count();
    expect(await rows()).toBe(1);
    await w.page.selectOption('#f-hidden', 'none');
    await expect.poll(rows).toBe(0);
    await w.page.selectOption('#f-hidden', 'added');
    await expect.poll(rows).toBe(1);
    await w.page.goto(`file://${join(index, '..', 'jobs', `${key}.html`)}`);
    await inert(w, 0);
    const shown = await w.page.evaluate(
      () =>
        (globalThis as unknown as { document: { body: { textContent: string } } }).document.body.textContent,
    );
    expect(shown).not.toMatch(/[\p{Bidi_Control}\p{Default_Ignorable_Code_Point}]/u);
    expect(await w.page.locator('table.diff.unified td.add:last-child').allTextContents()).toEqual([
      'if (role != "userU+202E U+2066// admin onlyU+2069 U+2066") {',
      'ok = 1 #U+200BU+E0049…U+E0045, 6 tag characters spelling "IGNORE"',
    ]);
    // each bidi control and the zero-width space a mark, the run of tag characters one
    expect(await w.page.locator('table.diff.unified td.add .hidden-char').count()).toBe(6);
    // heard, not only seen: each mark is one image named for the character, the run for what it spells
    // (in the view on screen: hidden ones are out of the accessibility tree)
    const shownView = w.page.locator('table.diff.split');
    expect(
      await shownView
        .getByRole('img', { name: 'hidden character: right-to-left override, U+202E', exact: true })
        .count(),
    ).toBe(1);
    expect(
      await shownView
        .getByRole('img', { name: 'hidden character: left-to-right isolate, U+2066', exact: true })
        .count(),
    ).toBe(2);
    expect(
      await shownView
        .getByRole('img', {
          name: 'hidden text: U+E0049…U+E0045, 6 tag characters spelling "IGNORE"',
          exact: true,
        })
        .count(),
    ).toBe(1);
    const warnings = await w.page.locator('.hidden-warning').allTextContents();
    expect(warnings).toHaveLength(2); // the change's, then the file's
    expect(warnings[0]).toMatch(/^This change adds 11 hidden character\(s\)/);
    expect(warnings[1]).toMatch(/^These lines add 11 hidden character\(s\)/);
    expect(clean(w)).toEqual(CLEAN);

    // the terminal's diff and its --json carry them as escapes, never raw
    const diff = await sb.genjob(['apply', key, '--dry-run', '--diff']);
    expect(diff.exitCode).toBe(0);
    expect(diff.stdout).not.toMatch(/[\p{Bidi_Control}\p{Default_Ignorable_Code_Point}]/u);
    expect(diff.stdout).toContain('+if (role != "user\\u202e \\u2066// admin only\\u2069 \\u2066") {');
    expect(diff.stdout).toContain('+ok = 1 #\\u200b\\u{e0049}\\u{e0047}');
    expect(diff.stdout).toContain('warning: the diff adds 11 hidden character(s)');
    expect(diff.stdout).toContain('; its tag characters spell "IGNORE"\n');
    const json = await sb.genjob(['apply', key, '--dry-run', '--diff', '--json']);
    expect(json.stdout).not.toMatch(/[\p{Bidi_Control}\p{Default_Ignorable_Code_Point}]/u);
    expect(JSON.stringify(JSON.parse(json.stdout))).toContain('\u202e \u2066// admin only');
  });

  it('runs the same payloads on a page without genjob (they are live)', async () => {
    const page = join(suiteDir, 'control.html');
    writeFileSync(page, `<!DOCTYPE html><html><body>${payload('control')}</body></html>`);
    const w = await watchedPage(ctx);
    await open(w, page);
    await w.page.getByText('click control').click();
    await expect
      .poll(() => [...w.pwned].sort())
      .toEqual(['control-link', 'control-onerror', 'control-script']);
  });

  it("runs nothing even where escaping is broken on purpose: the page's CSP refuses it", async () => {
    const sb = await makeSandbox();
    const gen = sb.script('gen.sh', `printf 'plain line\\n' >> README.md`);
    const key = await mintKey(sb, 'Add a line', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    const r = await sb.genjob(['report', '--json', '--out', join(suiteDir, 'broken')]);
    expect(r.exitCode).toBe(0);
    for (const file of [
      join(suiteDir, 'broken', 'index.html'),
      join(suiteDir, 'broken', 'jobs', `${key}.html`),
    ]) {
      writeFileSync(file, readFileSync(file, 'utf8').replace('<body>', `<body>${payload('injected')}`));
      const w = await watchedPage(ctx);
      await open(w, file);
      await w.page.getByText('click injected').click();
      await w.page.waitForTimeout(200);
      expect(w.pwned).toEqual([]);
      expect(w.consoleErrors.join('\n')).toMatch(/Content Security Policy/);
    }
  });
});
