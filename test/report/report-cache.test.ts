// The report's cache: a job whose files all stamp the same is taken from it; any write to a file the job
// was gathered from (its receipt, an output, an input in the tree, a move to another state) makes it be
// gathered again; checks are asked afresh either way; a page edited or removed by hand is written
// again, and so is the page of a job whose checks or shadow answers changed though its files did not;
// the file is written only when something changed, a few changed entries are appended to it, and a
// line torn off it costs only its entry; a cache of another renderer, repository or trust file, or one
// that does not parse, or one reached through a link, is ignored.
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonical, sha256 } from '../../bench/fixtures.mjs';
import { loadAssets } from '../../src/report/assets.js';
import { type CheckSource, NO_CHECKS } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import { CACHE_FILE, ReportCache } from '../../src/report/report-cache.js';
import { writeReport } from '../../src/report/write-report.js';
import type { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp-store.js';
import { check, fixtureRepo, patchReceipt, tableChecks } from './fixture.js';

/** The user's secret the cache's lines are sealed with (a fixed one: these tests are one user). */
const SECRET = Buffer.alloc(32, 7);

/** Mark every cached job, so a job taken from the cache can be told from one gathered again. */
function mark(cache: ReportCache): void {
  for (const c of cache.jobs.values()) c.job = { ...c.job, instruction: `cached: ${c.job.instruction}` };
}

/** One report into `dir` as the command makes it: load the cache, gather, write, save. */
async function report(store: Store, dir: string, checks: CheckSource = NO_CHECKS) {
  const assets = loadAssets();
  const cache = ReportCache.load(dir, ReportCache.idOf(assets.renderId, store.root), SECRET);
  const out = await writeReport(store, await gatherReport(store, { checks, cache }), dir, assets, cache);
  await cache.save(dir);
  return out;
}

describe('the report cache', () => {
  it('takes a job whose files did not change from the cache, and gathers one whose receipt changed', async () => {
    const { store, jobs } = fixtureRepo(3);
    const cache = new ReportCache('x', SECRET);
    await gatherReport(store, { checks: NO_CHECKS, cache });
    expect([...cache.jobs.keys()].sort()).toEqual(jobs.map((j) => j.key).sort());
    mark(cache);
    patchReceipt(store, jobs[1]!.key, { usage: { prompt_tokens: 3, completion_tokens: 4, requests: 1 } });
    const second = await gatherReport(store, { checks: NO_CHECKS, cache });
    const of = (k: string) => second.jobs.find((j) => j.key === k)!;
    expect(of(jobs[0]!.key).instruction).toMatch(/^cached: /);
    expect(of(jobs[1]!.key).instruction).toBe('Change line 4 of module 1');
    expect(of(jobs[1]!.key).receipt!.usage).toEqual({ prompt: 3, completion: 4, requests: 1 });
  });

  it.each([
    {
      what: 'an output replaced in out/',
      change: (root: string, key: string) =>
        writeFileSync(join(root, '.gen', 'out', key, 'src/m0.txt'), 'other\n'),
      see: (j: { files: Array<{ bytes: string }> }) => expect(j.files[0]!.bytes).toBe('drift'),
    },
    {
      what: 'its input edited in the tree',
      change: (root: string) => writeFileSync(join(root, 'src/m0.txt'), 'edited\n'),
      see: (j: { files: Array<{ inputFound: boolean }> }) => expect(j.files[0]!.inputFound).toBe(false),
    },
    {
      what: 'the job moved to another state',
      change: (root: string, key: string) =>
        renameSync(
          join(root, '.gen', 'received', `${key}.json`),
          join(root, '.gen', 'running', `${key}.json`),
        ),
      see: (j: { state: string }) => expect(j.state).toBe('running'),
    },
  ])('gathers a job again after $what', async ({ change, see }) => {
    const { root, store, jobs } = fixtureRepo(1);
    const cache = new ReportCache('x', SECRET);
    await gatherReport(store, { checks: NO_CHECKS, cache });
    mark(cache);
    change(root, jobs[0]!.key);
    const [job] = (await gatherReport(store, { checks: NO_CHECKS, cache })).jobs;
    expect(job!.instruction).not.toMatch(/^cached: /);
    see(job as never);
  });

  it('gathers again a job whose entry stamps no file (it vouches for nothing), even one sealed by this user', async () => {
    const { store, jobs } = fixtureRepo(2);
    const cache = new ReportCache('x', SECRET);
    await gatherReport(store, { checks: NO_CHECKS, cache });
    mark(cache);
    cache.jobs.get(jobs[0]!.key)!.stamps = [];
    const model = await gatherReport(store, { checks: NO_CHECKS, cache });
    const of = (k: string) => model.jobs.find((j) => j.key === k)!;
    expect(of(jobs[0]!.key).instruction).not.toMatch(/^cached: /);
    expect(of(jobs[1]!.key).instruction).toMatch(/^cached: /);
  });

  it('asks for checks afresh even for a job taken from the cache', async () => {
    const { store, jobs } = fixtureRepo(1);
    const cache = new ReportCache('x', SECRET);
    const table = new Map([[jobs[0]!.key, [check('tests', 'pass')]]]);
    await gatherReport(store, { checks: tableChecks(['tests'], table), cache });
    table.set(jobs[0]!.key, [check('tests', 'fail')]);
    const [job] = (await gatherReport(store, { checks: tableChecks(['tests'], table), cache })).jobs;
    expect(job!.checks.map((c) => c.verdict)).toEqual(['fail']);
  });

  it("keeps a job's checks while its receipt, the check context and the records' files stand", async () => {
    const { root, store, jobs } = fixtureRepo(2);
    const records = join(root, '.gen', 'fake-checks');
    mkdirSync(records);
    const asked: string[] = [];
    const source = (context: string): CheckSource => ({
      checkers: ['tests'],
      context: async () => context,
      filesOf: (key) => [join(records, key)],
      checksOf: async (key) => {
        asked.push(key);
        return [check('tests', 'pass')];
      },
    });
    const cache = new ReportCache('x', SECRET);
    await gatherReport(store, { checks: source('a'), cache });
    expect(asked).toHaveLength(2);
    asked.length = 0;
    await gatherReport(store, { checks: source('a'), cache });
    expect(asked).toEqual([]);
    writeFileSync(join(records, jobs[0]!.key), 'a new record');
    await gatherReport(store, { checks: source('a'), cache });
    expect(asked).toEqual([jobs[0]!.key]);
    asked.length = 0;
    patchReceipt(store, jobs[1]!.key, { usage: { prompt_tokens: 1, completion_tokens: 1, requests: 1 } });
    await gatherReport(store, { checks: source('a'), cache });
    expect(asked).toEqual([jobs[1]!.key]);
    asked.length = 0;
    await gatherReport(store, { checks: source('b'), cache });
    expect(asked.sort()).toEqual(jobs.map((j) => j.key).sort());
  });

  it('writes a page edited or removed by hand again, and nothing else', async () => {
    const { store, jobs } = fixtureRepo(3);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const edited = join(dir, 'jobs', `${jobs[0]!.key}.html`);
    writeFileSync(edited, readFileSync(edited, 'utf8').replace('<h1>', '<h1>edited '));
    rmSync(join(dir, 'jobs', `${jobs[1]!.key}.html`));
    const again = await report(store, dir);
    expect(again.written.sort()).toEqual([`jobs/${jobs[0]!.key}.html`, `jobs/${jobs[1]!.key}.html`].sort());
    expect(readFileSync(edited, 'utf8')).not.toContain('<h1>edited ');
  });

  it('sees a check record made in a directory that did not exist (a missing directory stands for its files)', async () => {
    const { root, store, jobs } = fixtureRepo(2);
    const records = join(root, '.gen', 'fake-checks');
    const asked: string[] = [];
    const source: CheckSource = {
      checkers: ['tests'],
      context: async () => 'c',
      filesOf: (key) => [join(records, key)],
      checksOf: async (key) => {
        asked.push(key);
        return [check('tests', 'pass')];
      },
    };
    const cache = new ReportCache('x', SECRET);
    await gatherReport(store, { checks: source, cache });
    // stamped by its missing directory, so the next gathering lstats that directory once for both jobs
    expect(cache.jobs.get(jobs[0]!.key)!.checks!.stamps).toEqual([[join(records, jobs[0]!.key), '-/']]);
    asked.length = 0;
    await gatherReport(store, { checks: source, cache });
    expect(asked).toEqual([]);
    mkdirSync(records);
    writeFileSync(join(records, jobs[0]!.key), 'a record');
    await gatherReport(store, { checks: source, cache });
    // the directory is there now: every file stamped by its absence is asked again
    expect(asked.sort()).toEqual(jobs.map((j) => j.key).sort());
    // and stamped on its own from now on, so a file that appears later is seen too
    expect(cache.jobs.get(jobs[1]!.key)!.checks!.stamps).toEqual([[join(records, jobs[1]!.key), '-']]);
    asked.length = 0;
    writeFileSync(join(records, jobs[1]!.key), 'a record');
    await gatherReport(store, { checks: source, cache });
    expect(asked).toEqual([jobs[1]!.key]);
  });

  it('makes no check context for jobs without a checker, and asks again once one is recorded or declared', async () => {
    const { root, store, jobs } = fixtureRepo(2);
    const records = join(root, '.gen', 'fake-checks');
    let contexts = 0;
    const source = (checkers: string[]): CheckSource => ({
      checkers,
      // the declared checkers are part of the context, as checkSource makes it
      context: async () => {
        contexts += 1;
        return checkers.join(',');
      },
      filesOf: (key) => [join(records, key)],
      checksOf: async (key) => [
        ...checkers.map((c) => check(c, 'missing')),
        ...(existsSync(join(records, key)) ? [check('tests', 'pass')] : []),
      ],
    });
    const cache = new ReportCache('x', SECRET);
    await gatherReport(store, { checks: source([]), cache });
    const again = await gatherReport(store, { checks: source([]), cache });
    expect(again.jobs.map((j) => j.checks)).toEqual([[], []]);
    expect(contexts).toBe(0);
    mkdirSync(records);
    writeFileSync(join(records, jobs[0]!.key), 'a record');
    const recorded = await gatherReport(store, { checks: source([]), cache });
    expect(recorded.jobs.find((j) => j.key === jobs[0]!.key)!.checks.map((c) => c.verdict)).toEqual(['pass']);
    expect(contexts).toBeGreaterThan(0);
    // a checker declared now: the job that had none shows it, though its files stamp the same
    const declared = await gatherReport(store, { checks: source(['lint']), cache });
    expect(declared.jobs.find((j) => j.key === jobs[1]!.key)!.checks.map((c) => c.checker)).toEqual(['lint']);
  });

  it("writes a job's page again when its checks change though none of its files did", async () => {
    const { store, jobs } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    const table = new Map([[jobs[0]!.key, [check('tests', 'pass')]]]);
    await report(store, dir, tableChecks(['tests'], table));
    expect((await report(store, dir, tableChecks(['tests'], table))).written).toEqual([]);
    table.set(jobs[0]!.key, [check('tests', 'fail')]);
    const again = await report(store, dir, tableChecks(['tests'], table));
    expect(again.written).toContain(`jobs/${jobs[0]!.key}.html`);
    expect(readFileSync(join(dir, 'jobs', `${jobs[0]!.key}.html`), 'utf8')).toContain('v-fail');
  });

  it('writes the job pages again when a shadow plane answers, and again when it is gone', async () => {
    const { store, jobs } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const j = jobs[0]!;
    const plane = join(store.layout.gen, 'shadow', 'alt', 'results', j.key);
    mkdirSync(dirname(join(plane, 'files', j.path)), { recursive: true });
    writeFileSync(join(plane, 'files', j.path), j.after);
    const receipt = JSON.parse(readFileSync(store.layout.receipt(j.key), 'utf8')) as Record<string, unknown>;
    const outputs = [{ path: j.path, sha256: sha256(j.after), bytes: Buffer.byteLength(j.after) }];
    writeFileSync(join(plane, 'receipt.json'), canonical({ ...receipt, outputs, plane: 'shadow:alt' }));
    const pages = jobs.map((x) => `jobs/${x.key}.html`).sort();
    expect((await report(store, dir)).written.filter((p) => p.startsWith('jobs/')).sort()).toEqual(pages);
    expect(readFileSync(join(dir, 'jobs', `${j.key}.html`), 'utf8')).toContain('shadow:alt');
    rmSync(join(store.layout.gen, 'shadow'), { recursive: true });
    expect((await report(store, dir)).written.filter((p) => p.startsWith('jobs/')).sort()).toEqual(pages);
    expect(readFileSync(join(dir, 'jobs', `${j.key}.html`), 'utf8')).not.toContain('shadow:alt');
  });

  it('appends the entries a report changed to the file, and the next report reads them', async () => {
    const { store, jobs } = fixtureRepo(3);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const file = join(dir, CACHE_FILE);
    const before = statSync(file);
    patchReceipt(store, jobs[1]!.key, { usage: { prompt_tokens: 5, completion_tokens: 6, requests: 1 } });
    expect((await report(store, dir)).written).toContain(`jobs/${jobs[1]!.key}.html`);
    const after = statSync(file);
    expect(after.ino).toBe(before.ino);
    expect(after.size).toBeGreaterThan(before.size);
    const cache = ReportCache.load(dir, ReportCache.idOf(loadAssets().renderId, store.root), SECRET);
    expect(cache.jobs.get(jobs[1]!.key)!.job.receipt!.usage).toEqual({
      prompt: 5,
      completion: 6,
      requests: 1,
    });
    expect((await report(store, dir)).written).toEqual([]);
  });

  it('reads back entries holding text beyond ASCII (sealed as their UTF-8 bytes)', async () => {
    const words = (i: number) => `Übersetze Zeile ${i} — 文字 ${i} 🙂`;
    const { store, jobs } = fixtureRepo(2, { instruction: words });
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    // an append too: the whole file and an appended line are each read back
    patchReceipt(store, jobs[1]!.key, { usage: { prompt_tokens: 2, completion_tokens: 3, requests: 1 } });
    await report(store, dir);
    const cache = ReportCache.load(dir, ReportCache.idOf(loadAssets().renderId, store.root), SECRET);
    expect(cache.jobs.size).toBe(2);
    expect(cache.jobs.get(jobs[0]!.key)!.job.instruction).toBe(words(0));
    expect(cache.jobs.get(jobs[1]!.key)!.job.instruction).toBe(words(1));
    expect(cache.jobs.get(jobs[1]!.key)!.job.receipt!.usage).toEqual({
      prompt: 2,
      completion: 3,
      requests: 1,
    });
    expect((await report(store, dir)).written).toEqual([]);
  });

  it("reads no cache through a link (the directory may be a branch's): not even one to a good cache", async () => {
    const { store } = fixtureRepo(2);
    const good = join(tempDir('genjob-report-out-'), 'r');
    await report(store, good);
    const id = ReportCache.idOf(loadAssets().renderId, store.root);
    expect(ReportCache.load(good, id, SECRET).jobs.size).toBe(2); // so the link below would be read
    const dir = join(tempDir('genjob-report-out-'), 'r');
    mkdirSync(dir);
    symlinkSync(join(good, CACHE_FILE), join(dir, CACHE_FILE));
    expect(ReportCache.load(dir, id, SECRET).jobs.size).toBe(0);
  });

  it('gathers again a job whose newest line was torn off, and then writes the file whole', async () => {
    const { store, jobs } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const file = join(dir, CACHE_FILE);
    const size = statSync(file).size;
    patchReceipt(store, jobs[0]!.key, { usage: { prompt_tokens: 7, completion_tokens: 1, requests: 1 } });
    await report(store, dir);
    // a crash in the append: only part of the job's new line reached the file
    truncateSync(file, size + 40);
    const id = ReportCache.idOf(loadAssets().renderId, store.root);
    const torn = ReportCache.load(dir, id, SECRET);
    mark(torn);
    const model = await gatherReport(store, { checks: NO_CHECKS, cache: torn });
    const of = (k: string) => model.jobs.find((x) => x.key === k)!;
    // the older line of the job no longer stamps as its receipt does
    expect(of(jobs[0]!.key).instruction).not.toMatch(/^cached: /);
    expect(of(jobs[0]!.key).receipt!.usage).toEqual({ prompt: 7, completion: 1, requests: 1 });
    expect(of(jobs[1]!.key).instruction).toMatch(/^cached: /);
    const ino = statSync(file).ino;
    await report(store, dir);
    expect(statSync(file).ino).not.toBe(ino);
    expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
    expect(ReportCache.load(dir, id, SECRET).jobs.size).toBe(2);
  });

  it('writes the file whole again once superseded lines outnumber its entries', async () => {
    const dir = tempDir('genjob-report-cache-');
    const cache = new ReportCache('x', SECRET);
    for (let i = 0; i < 200; i++) {
      cache.setPage('index.html', [i, 1, 2, 3], 'f'.repeat(64));
      await cache.save(dir);
    }
    const lines = readFileSync(join(dir, CACHE_FILE), 'utf8').split('\n').length - 1;
    expect(lines).toBeLessThanOrEqual(1 + 1 + 64 + 1);
    expect(ReportCache.load(dir, 'x', SECRET).pages.get('index.html')).toEqual([
      [199, 1, 2, 3],
      'f'.repeat(64),
    ]);
  });

  it('writes the file whole again when a job left the report', async () => {
    const { root, store, jobs } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const ino = statSync(join(dir, CACHE_FILE)).ino;
    rmSync(join(root, '.gen', 'received', `${jobs[0]!.key}.json`));
    rmSync(store.layout.receipt(jobs[0]!.key));
    expect((await report(store, dir)).removed).toEqual([`jobs/${jobs[0]!.key}.html`]);
    expect(statSync(join(dir, CACHE_FILE)).ino).not.toBe(ino);
    const cache = ReportCache.load(dir, ReportCache.idOf(loadAssets().renderId, store.root), SECRET);
    expect([...cache.jobs.keys()]).toEqual([jobs[1]!.key]);
    expect([...cache.pages.keys()]).not.toContain(`jobs/${jobs[0]!.key}.html`);
  });

  it('leaves a cache file that holds no entry alone too (a report of no jobs)', async () => {
    const dir = tempDir('genjob-report-cache-');
    await new ReportCache('x', SECRET).save(dir);
    const loaded = ReportCache.load(dir, 'x', SECRET);
    expect(loaded.jobs.size + loaded.pages.size).toBe(0);
    expect(loaded.changed).toBe(false);
  });

  it('leaves the cache file alone when nothing changed', async () => {
    const { store } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const before = statSync(join(dir, CACHE_FILE));
    expect((await report(store, dir)).written).toEqual([]);
    expect(statSync(join(dir, CACHE_FILE)).ino).toBe(before.ino);
  });

  it('skips hostile lines appended under a valid header, and a line naming no job, without failing the report', async () => {
    const { store, jobs } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const file = join(dir, CACHE_FILE);
    const evil = [
      'null',
      '5',
      '"x"',
      '[1,2]',
      '{}',
      '{"j":{}}',
      '{"j":{"job":null}}',
      '{"j":null}',
      '{"p":5}',
      '{"p":null}',
    ];
    // sealed as this user's own lines are: the shapes alone must not fail the report, as lines or as
    // entries of a line
    const id = ReportCache.idOf(loadAssets().renderId, store.root);
    const sealed = [...evil, `[${evil.join(',')}]`].map(
      (line) => `${ReportCache.seal(SECRET, id, line)} ${line}`,
    );
    writeFileSync(file, `${readFileSync(file, 'utf8')}${sealed.join('\n')}\n`);
    const cache = ReportCache.load(dir, id, SECRET);
    expect([...cache.jobs.keys()].sort()).toEqual(jobs.map((j) => j.key).sort());
    const model = await gatherReport(store, { checks: NO_CHECKS, cache });
    expect(model.jobs.map((j) => j.key).sort()).toEqual(jobs.map((j) => j.key).sort());
    expect((await report(store, dir)).written).toEqual([]);
  });

  it('ignores forged lines: sealed under another secret or for another cache, unsealed, or changed after sealing', async () => {
    const { store, jobs } = fixtureRepo(2);
    const dir = join(tempDir('genjob-report-out-'), 'r');
    await report(store, dir);
    const file = join(dir, CACHE_FILE);
    const id = ReportCache.idOf(loadAssets().renderId, store.root);
    const real = ReportCache.load(dir, id, SECRET).jobs.get(jobs[0]!.key)!;
    // the job's real stamps: only the seal stands between this entry and the page
    const json = JSON.stringify([{ j: { ...real, job: { ...real.job, instruction: 'FORGED' } } }]);
    const line = (seal: string, text = json) => `${seal} ${text}\n`;
    const good = ReportCache.seal(SECRET, id, json);
    const forged = [
      line(ReportCache.seal(Buffer.alloc(32, 9), id, json)),
      line(ReportCache.seal(SECRET, ReportCache.idOf('another-renderer', store.root), json)),
      line('0'.repeat(32)),
      `${json}\n`,
      line(good, json.replace('FORGED', 'FORGEd')),
      line(good.replace(/^./, (c) => (c === '0' ? '1' : '0'))),
    ];
    const clean = readFileSync(file, 'utf8');
    for (const evil of forged) {
      writeFileSync(file, clean + evil);
      expect(ReportCache.load(dir, id, SECRET).jobs.get(jobs[0]!.key)!.job.instruction).not.toMatch(/FORGE/);
      await report(store, dir);
      expect(readFileSync(join(dir, 'jobs', `${jobs[0]!.key}.html`), 'utf8')).not.toMatch(/FORGE/);
    }
    // the same line sealed by this user is read: the test can fail
    writeFileSync(file, clean + line(good));
    expect(ReportCache.load(dir, id, SECRET).jobs.get(jobs[0]!.key)!.job.instruction).toBe('FORGED');
  });

  it('ignores a cache written for another renderer, repository or trust file, and one that does not parse', async () => {
    const { root, store } = fixtureRepo(2);
    const dir = tempDir('genjob-report-cache-');
    const cache = new ReportCache(ReportCache.idOf('renderer-a', root), SECRET);
    await gatherReport(store, { checks: NO_CHECKS, cache });
    await cache.save(dir);
    expect(ReportCache.load(dir, ReportCache.idOf('renderer-a', root), SECRET).jobs.size).toBe(2);
    expect(ReportCache.load(dir, ReportCache.idOf('renderer-b', root), SECRET).jobs.size).toBe(0);
    expect(ReportCache.load(dir, ReportCache.idOf('renderer-a', `${root}-other`), SECRET).jobs.size).toBe(0);
    // a signer may now be trusted, or no longer
    writeFileSync(join(root, 'genjob-trust.json'), '{"schema":"genjob/trust@1","keys":[]}\n');
    expect(ReportCache.load(dir, ReportCache.idOf('renderer-a', root), SECRET).jobs.size).toBe(0);
    writeFileSync(join(dir, CACHE_FILE), '{"id": broken');
    expect(ReportCache.load(dir, cache.id, SECRET).jobs.size).toBe(0);
  });
});
