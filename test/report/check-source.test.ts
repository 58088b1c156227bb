// The report's check states are the checks plane's: real records under .gen/checks/ (written with its
// encoder), read through check-source.ts, say what check-state.ts says (verdict, marks, staleness, the
// record that speaks), with the attempts' logs and a judge's samples and spend; a report cache keeps a
// job's checks only while the context and the record directories stay as they were.
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkStates } from '../../src/check/check-state.js';
import { CONFIG_FILE } from '../../src/cli/config-file.js';
import { checkSource } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import type { ReportCheck } from '../../src/report/model.js';
import { ReportCache } from '../../src/report/report-cache.js';
import { checkRecords } from '../helpers/check-record.js';
import { commitAll } from '../helpers/commit-all.js';
import { fixtureRepo } from './fixture.js';

/** The user's secret the cache's lines are sealed with (a fixed one: these tests are one user). */
const SECRET = Buffer.alloc(32, 7);

const named = (list: readonly ReportCheck[], checker: string) => list.find((c) => c.checker === checker)!;

/** Four jobs, two checkers (a command and a judge), records for three of the jobs (cheap: no process but git). */
async function world() {
  const repo = fixtureRepo(4);
  writeFileSync(join(repo.root, 'rubric.md'), 'Is the change what was asked?\n');
  writeFileSync(
    join(repo.root, 'genjob.config.json'),
    JSON.stringify({
      checkers: {
        tests: { run: 'true' },
        review: { judge: 'builtin:openai', model: 'judge-model', rubric: 'rubric.md' },
      },
    }),
  );
  const tree = await commitAll(repo.root);
  const record = await checkRecords(repo.root, repo.store, tree);
  const [a, b, c] = repo.jobs.map((j) => j.key);
  const digests = {
    aTests: record(a!, 'tests', [{ outcome: 'pass', log: 'ran 3 tests\nOK\n' }]),
    bTests: record(b!, 'tests', [{ outcome: 'fail', log: 'FAILED test_x\n' }, { outcome: 'pass' }]),
    cOld: record(c!, 'tests', [{ outcome: 'pass' }], { base_tree: 'f'.repeat(40) }),
    aReview: record(
      a!,
      'review',
      [
        {
          outcome: 'pass',
          samples: [
            { index: 0, vote: 'pass', score: 0.9, reason: 'does what was asked', model: 'judge-model' },
            { index: 1, vote: 'invalid', score: null, reason: 'not JSON', model: 'judge-model' },
          ],
        },
      ],
      {
        kind: 'judge',
        judge: {
          model: 'judge-model',
          samples: 2,
          quorum: 1,
          agreement: '1/2',
          spent: { prompt_tokens: 300, completion_tokens: 40, requests: 2 },
        },
      },
    ),
  };
  return { ...repo, record, digests };
}

describe('checkSource', () => {
  it('says what check-state.ts says, for every declared checker of every job', async () => {
    const f = await world();
    const source = await checkSource(f.root);
    expect(source.checkers).toEqual(['review', 'tests']); // as loadCheckers orders them
    for (const { key } of f.jobs) {
      const mine = await source.checksOf(key);
      const theirs = await checkStates(f.root, key, ['review', 'tests']);
      expect(
        mine.map((c) => ({ checker: c.checker, verdict: c.verdict, current: c.current, stale: c.stale })),
      ).toEqual(
        theirs.map((s) => ({ checker: s.checker, verdict: s.verdict, current: s.current, stale: s.stale })),
      );
      expect(mine.map((c) => c.recordDigest)).toEqual(theirs.map((s) => s.recordDigest ?? null));
    }
  });

  it('shows the attempts (marks, exit, log digest), staleness and a missing record', async () => {
    const f = await world();
    const source = await checkSource(f.root);
    const [a, b, c, d] = f.jobs.map((j) => j.key);
    const aTests = named(await source.checksOf(a!), 'tests');
    expect(aTests).toMatchObject({
      verdict: 'pass',
      current: true,
      marks: '✓',
      recordDigest: f.digests.aTests,
    });
    expect(aTests!.attempts).toEqual([{ exit: 0, ms: 1500, log: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    const bTests = named(await source.checksOf(b!), 'tests');
    expect(bTests).toMatchObject({ verdict: 'flaky', marks: '✗✓', current: true });
    expect(bTests!.attempts.map((x) => x.exit)).toEqual([1, 0]);
    const cTests = named(await source.checksOf(c!), 'tests');
    expect(cTests).toMatchObject({
      verdict: 'pass',
      current: false,
      stale: 'base',
      recordDigest: f.digests.cOld,
    });
    expect(await source.checksOf(d!)).toMatchObject([
      { checker: 'review', verdict: 'missing' },
      { checker: 'tests', verdict: 'missing', recordDigest: null, attempts: [] },
    ]);
  });

  it("shows a judge's samples (an invalid answer as neither pass nor fail) and what it spent", async () => {
    const f = await world();
    const source = await checkSource(f.root);
    const review = named(await source.checksOf(f.jobs[0]!.key), 'review');
    expect(review.judge).toEqual([
      { pass: true, score: 0.9, reason: 'does what was asked' },
      { pass: null, score: null, reason: 'not JSON' },
    ]);
    expect(review.spent).toEqual({ model: 'judge-model', prompt: 300, completion: 40, requests: 2 });
    const model = await gatherReport(f.store, { checks: source, env: {} });
    expect(model.spend.find((r) => r.mode === 'judge')).toMatchObject({
      generator: 'judge-model',
      prompt: 300,
      completion: 40,
    });
  });

  it('a checker no longer declared still shows the records it left, as genjob show lists them', async () => {
    const f = await world();
    const key = f.jobs[3]!.key;
    f.record(key, 'lint', [{ outcome: 'pass' }]);
    const source = await checkSource(f.root);
    expect((await source.checksOf(key)).map((c) => [c.checker, c.verdict, c.stale])).toEqual([
      ['review', 'missing', undefined],
      ['tests', 'missing', undefined],
      ['lint', 'pass', 'binding'],
    ]);
  });

  it('looks for the config file genjob reads, and reads it as loadCheckers does whenever a name is there', async () => {
    const { root } = fixtureRepo(1);
    expect((await checkSource(root)).checkers).toEqual([]);
    // a dangling link is no config file, as for loadConfig
    symlinkSync(join(root, 'nowhere.json'), join(root, CONFIG_FILE));
    expect((await checkSource(root)).checkers).toEqual([]);
    writeFileSync(join(root, 'nowhere.json'), JSON.stringify({ checkers: { tests: { run: 'true' } } }));
    expect((await checkSource(root)).checkers).toEqual(['tests']);
    writeFileSync(join(root, 'nowhere.json'), '{"checkers": ');
    await expect(checkSource(root)).rejects.toMatchObject({ code: 'EGJ_CONFIG' });
  });

  it('runs no git for jobs without a checker, declared or recorded', async () => {
    const { root, store } = fixtureRepo(2);
    // a git that says where it was run, first on the PATH
    const bin = join(root, '..', 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'git'), `#!/bin/sh\necho ran >> '${join(root, '..', 'git-ran')}'\nexit 128\n`, {
      mode: 0o755,
    });
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      const model = await gatherReport(store, {
        checks: await checkSource(root),
        cache: new ReportCache('x', SECRET),
      });
      expect(model.jobs.map((j) => j.checks)).toEqual([[], []]);
      expect(existsSync(join(root, '..', 'git-ran'))).toBe(false);
      // once a checker is declared, the context is made (HEAD's tree is asked of git)
      writeFileSync(
        join(root, 'genjob.config.json'),
        JSON.stringify({ checkers: { tests: { run: 'true' } } }),
      );
      await gatherReport(store, { checks: await checkSource(root), cache: new ReportCache('x', SECRET) });
      expect(existsSync(join(root, '..', 'git-ran'))).toBe(true);
    } finally {
      process.env.PATH = path;
    }
  });

  it('a checker declared later changes the context: a cached job shows it', async () => {
    // no commit: no HEAD, so no binding either; the declared checkers alone tell the contexts apart
    const { root, store, jobs } = fixtureRepo(1);
    const declare = (names: string[]) =>
      writeFileSync(
        join(root, 'genjob.config.json'),
        JSON.stringify({ checkers: Object.fromEntries(names.map((n) => [n, { run: 'true' }])) }),
      );
    const cache = new ReportCache('x', SECRET);
    declare(['tests']);
    await gatherReport(store, { checks: await checkSource(root), cache });
    declare(['tests', 'lint']);
    const model = await gatherReport(store, { checks: await checkSource(root), cache });
    expect(
      model.jobs
        .find((j) => j.key === jobs[0]!.key)!
        .checks.map((c) => c.checker)
        .sort(),
    ).toEqual(['lint', 'tests']);
  });

  it('a report cache takes a job’s checks again once a record is added for it', async () => {
    const f = await world();
    const dir = join(f.root, '..', 'cache');
    const cache = ReportCache.load(dir, 'id', SECRET);
    const key = f.jobs[2]!.key;
    const first = await gatherReport(f.store, { checks: await checkSource(f.root), cache });
    expect(named(first.jobs.find((j) => j.key === key)!.checks, 'tests')).toMatchObject({ current: false });
    f.record(key, 'tests', [{ outcome: 'fail', log: 'broken\n' }]);
    const second = await gatherReport(f.store, { checks: await checkSource(f.root), cache });
    expect(named(second.jobs.find((j) => j.key === key)!.checks, 'tests')).toMatchObject({
      verdict: 'fail',
      current: true,
    });
  });
});
