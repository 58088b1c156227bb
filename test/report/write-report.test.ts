// The report is incremental and deterministic: a page is written again only when what it was rendered
// from changed (its job, its checks, the renderer) as the report's cache knows it, the same inputs give the
// same bytes, pages of jobs no longer shown go, a torn page is rewritten, and a directory genjob did not
// write is refused.
import { cpSync, readdirSync, readFileSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GenjobError } from '../../src/core/errors.js';
import { assetDir, loadAssets } from '../../src/report/assets.js';
import { NO_CHECKS } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import { LOG_TAIL_CHARS, logTail } from '../../src/report/job-bytes.js';
import { PAGE_TEMP_PREFIX } from '../../src/report/page-file.js';
import { LOG_PAGE_MARKUP, renderLog } from '../../src/report/render-log.js';
import { CACHE_FILE, ReportCache } from '../../src/report/report-cache.js';
import { writeReport } from '../../src/report/write-report.js';
import type { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp-store.js';
import { snapshot } from '../helpers/tree-snapshot.js';
import { check, fixtureRepo, patchReceipt, tableChecks } from './fixture.js';

/** The user's secret the cache is sealed with (one fixed user for these tests). */
const SECRET = Buffer.alloc(32, 7);

/** One report into `dir` as the command makes it: with the cache it left there. */
async function reportOf(
  store: Store,
  dir: string,
  o: Parameters<typeof gatherReport>[1] = { checks: NO_CHECKS },
) {
  const assets = loadAssets();
  const cache = ReportCache.load(dir, ReportCache.idOf(assets.renderId, store.root), SECRET);
  const out = await writeReport(store, await gatherReport(store, { ...o, cache }), dir, assets, cache);
  await cache.save(dir);
  return out;
}

describe('writeReport', () => {
  it('writes the index and a page per job, then nothing when nothing changed', async () => {
    const { store, jobs } = fixtureRepo(5);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    const first = await reportOf(store, dir);
    expect(first.written.sort()).toEqual([...jobs.map((j) => `jobs/${j.key}.html`), 'index.html'].sort());
    expect(first.index).toBe(join(dir, 'index.html'));
    const second = await reportOf(store, dir);
    expect(second.written).toEqual([]);
    expect(second.unchanged).toBe(6);
  });

  it('rewrites only the changed job page and the index when one receipt changes', async () => {
    const { store, jobs } = fixtureRepo(6);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await reportOf(store, dir);
    const before = readFileSync(join(dir, 'jobs', `${jobs[1]!.key}.html`), 'utf8');
    patchReceipt(store, jobs[3]!.key, { usage: { prompt_tokens: 7, completion_tokens: 5, requests: 1 } });
    const again = await reportOf(store, dir);
    expect(again.written).toEqual([`jobs/${jobs[3]!.key}.html`, 'index.html']);
    expect(readFileSync(join(dir, 'jobs', `${jobs[1]!.key}.html`), 'utf8')).toBe(before);
  });

  it("rewrites a job's page and the index when a check verdict changes, and no other page", async () => {
    const { store, jobs } = fixtureRepo(3);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    const table = new Map(jobs.map((j) => [j.key, [check('tests', 'pass')]]));
    await reportOf(store, dir, { checks: tableChecks(['tests'], table) });
    table.set(jobs[0]!.key, [check('tests', 'pass', { current: false, stale: 'binding' })]);
    const again = await reportOf(store, dir, { checks: tableChecks(['tests'], table) });
    expect(again.written).toEqual([`jobs/${jobs[0]!.key}.html`, 'index.html']);
  });

  it('hostile: a generated file of 4 MB of soft hyphens gives a page of bounded size that says where to see it', async () => {
    const soft = `${'\u00ad'.repeat(999)}\n`.repeat(2090);
    const { store, jobs } = fixtureRepo(1, { after: () => soft });
    const dir = join(tempDir('genjob-report-out-'), 'r');
    const out = await reportOf(store, dir);
    expect(out.undrawn).toEqual([]);
    const page = readFileSync(join(dir, 'jobs', `${jobs[0]!.key}.html`), 'utf8');
    expect(page.length).toBeLessThan(1024 * 1024);
    expect(page).toContain('too large to show here');
    expect(page).toContain(`genjob apply ${jobs[0]!.key} --dry-run --diff`);
    expect(page).toContain(`holds ${999 * 2090} hidden character(s)`.replace('holds', 'hold'));
  });

  it('hostile: a log of megabytes of soft hyphens is shown up to a bound, on its page and as a tail', () => {
    const log = Buffer.from(`${'\u00ad'.repeat(999)}\n`.repeat(2090));
    const page = renderLog('d'.repeat(64), { kind: 'ok', bytes: log }, loadAssets(), '0'.repeat(64));
    expect(page.length).toBeLessThan(LOG_PAGE_MARKUP + 64 * 1024 * 40);
    expect(page).toContain('too large to show here');
    const tail = logTail(log);
    expect(tail.length).toBeLessThanOrEqual(LOG_TAIL_CHARS + 1);
    expect(tail.startsWith('\u2026')).toBe(true);
    expect(logTail(Buffer.from('a\nb\n'))).toBe('a\nb');
  });

  it('a log page links back to the index, as a job page does', () => {
    const page = renderLog(
      'd'.repeat(64),
      { kind: 'ok', bytes: Buffer.from('ok\n') },
      loadAssets(),
      '0'.repeat(64),
    );
    expect(page).toContain(
      '<nav class="top"><a href="../index.html"><span aria-hidden="true">\u2190 </span>all jobs</a></nav>',
    );
  });

  it('writes the same bytes for the same inputs, in any directory', async () => {
    const { store } = fixtureRepo(4);
    const base = tempDir('genjob-report-out-');
    await reportOf(store, join(base, 'a'));
    await reportOf(store, join(base, 'b'));
    // the pages: the cache file beside them holds each one's stamp, which is this directory's own
    expect(snapshot(join(base, 'b'), [CACHE_FILE])).toEqual(snapshot(join(base, 'a'), [CACHE_FILE]));
  });

  it('removes the pages of jobs the report no longer shows', async () => {
    const { store, jobs } = fixtureRepo(3);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await reportOf(store, dir);
    const only = await reportOf(store, dir, { checks: NO_CHECKS, keys: [jobs[2]!.key.slice(0, 10)] });
    expect(only.removed.sort()).toEqual([`jobs/${jobs[0]!.key}.html`, `jobs/${jobs[1]!.key}.html`].sort());
    expect(readdirSync(join(dir, 'jobs'))).toEqual([`${jobs[2]!.key}.html`]);
  });

  it('removes what a report that died left (its temp files) and nothing it did not write', async () => {
    const { store } = fixtureRepo(1);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await reportOf(store, dir);
    // pid 2^22 + 1 is above Linux's pid_max: that writer is gone
    writeFileSync(join(dir, 'jobs', `${PAGE_TEMP_PREFIX}4194305-1-abcdef`), 'half a page');
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    writeFileSync(join(dir, 'jobs', 'README'), 'mine too');
    await reportOf(store, dir);
    expect(readdirSync(join(dir, 'jobs')).filter((n) => n.startsWith(PAGE_TEMP_PREFIX))).toEqual([]);
    expect(readdirSync(join(dir, 'jobs'))).toContain('README');
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it("keeps the user's files in --out that are named like another writer's temps, old or of a dead pid", async () => {
    const { store } = fixtureRepo(1);
    const dir = tempDir('genjob-report-out-');
    const mine = ['.tmp-1-notes.txt', '.tmp-4194305-draft', '.tmp-4194305-1-0-abcdef'];
    for (const name of mine) {
      writeFileSync(join(dir, name), 'mine');
      const hoursAgo = new Date(Date.now() - 2 * 3_600_000);
      utimesSync(join(dir, name), hoursAgo, hoursAgo);
    }
    await reportOf(store, dir);
    for (const name of mine) expect(readFileSync(join(dir, name), 'utf8')).toBe('mine');
  });

  it('writes a torn page again: without its last line it matches nothing', async () => {
    const { store, jobs } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await reportOf(store, dir);
    const page = join(dir, 'jobs', `${jobs[0]!.key}.html`);
    const whole = readFileSync(page, 'utf8');
    truncateSync(page, whole.length - 10);
    expect((await reportOf(store, dir)).written).toEqual([`jobs/${jobs[0]!.key}.html`]);
    expect(readFileSync(page, 'utf8')).toBe(whole);
  });

  it('writes every page again when the renderer changes (another stylesheet)', async () => {
    const { store } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await reportOf(store, dir);
    const assets = join(tempDir('genjob-report-assets-'), 'a');
    cpSync(assetDir(), assets, { recursive: true });
    writeFileSync(
      join(assets, 'report.css'),
      `${readFileSync(join(assets, 'report.css'), 'utf8')}\nh1 { color: red; }\n`,
    );
    const again = await writeReport(
      store,
      await gatherReport(store, { checks: NO_CHECKS }),
      dir,
      loadAssets(assets),
    );
    expect(again.written).toHaveLength(3);
  });

  it('refuses a directory whose index.html genjob did not write, and writes nothing there', async () => {
    const { store } = fixtureRepo(1);
    const dir = tempDir('genjob-report-out-');
    writeFileSync(join(dir, 'index.html'), '<p>my own page</p>\n');
    const err = await reportOf(store, dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GenjobError);
    expect((err as GenjobError).code).toBe('EGJ_REPORT_DIR');
    expect(readdirSync(dir)).toEqual(['index.html']);
    expect(readFileSync(join(dir, 'index.html'), 'utf8')).toBe('<p>my own page</p>\n');
  });
});
