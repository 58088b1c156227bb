// A page that cannot be drawn (a bug, or more markup than a string can hold) never sinks the report: a
// note stands in its place, its row on the index says why, every other page is written, and the next
// report draws it again (no cache entry vouches for the note).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadAssets } from '../../src/report/assets.js';
import { NO_CHECKS } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import { ReportCache } from '../../src/report/report-cache.js';
import { writeReport } from '../../src/report/write-report.js';
import { tempDir } from '../helpers/temp-store.js';
import { fixtureRepo } from './fixture.js';

const BREAKS = 'this page breaks';
let broken = true;

vi.mock('../../src/report/render-job.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/report/render-job.js')>();
  return {
    ...real,
    renderJob: (...args: Parameters<typeof real.renderJob>) => {
      if (broken && args[0].instruction === BREAKS) throw new RangeError('Invalid string length');
      return real.renderJob(...args);
    },
  };
});

describe('writeReport, a page that cannot be drawn', () => {
  it('hostile: writes the other pages and the index, whose row says why, and draws it again next time', async () => {
    const { store, jobs } = fixtureRepo(3, { instruction: (i) => (i === 1 ? BREAKS : `job ${i}`) });
    const dir = join(tempDir('genjob-report-out-'), 'r');
    const assets = loadAssets();
    const report = async () => {
      const cache = ReportCache.load(dir, ReportCache.idOf(assets.renderId, store.root), Buffer.alloc(32, 7));
      const out = await writeReport(
        store,
        await gatherReport(store, { checks: NO_CHECKS, cache }),
        dir,
        assets,
        cache,
      );
      await cache.save(dir);
      return out;
    };
    const out = await report();
    const bad = `jobs/${jobs[1]!.key}.html`;
    expect(out.undrawn).toEqual([{ page: bad, why: 'RangeError: Invalid string length' }]);
    expect(out.written.sort()).toEqual([...jobs.map((j) => `jobs/${j.key}.html`), 'index.html'].sort());
    expect(readFileSync(join(dir, bad), 'utf8')).toContain(
      'This page could not be drawn: RangeError: Invalid string length',
    );
    const index = readFileSync(join(dir, 'index.html'), 'utf8');
    const row = index.slice(index.indexOf(bad)).split('</tr>')[0]!;
    expect(row).toContain('page not drawn: RangeError: Invalid string length');
    broken = false;
    const again = await report();
    expect(again.written).toEqual([bad, 'index.html']);
    expect(readFileSync(join(dir, 'index.html'), 'utf8')).not.toContain('page not drawn');
  });
});
