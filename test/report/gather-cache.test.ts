// The gather's cache: a job whose files all stamp the same is taken from it; any write to a file the job
// was gathered from (its receipt, an output, an input in the tree, a move to another state) makes it be
// gathered again; checks are asked afresh either way; a cache of another renderer or repository, or one
// that does not parse, is ignored.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NO_CHECKS } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import {
  CACHE_FILE,
  type CachedJob,
  cacheId,
  loadGatherCache,
  saveGatherCache,
} from '../../src/report/gather-cache.js';
import { tempDir } from '../helpers/temp-store.js';
import { check, fixtureRepo, patchReceipt, tableChecks } from './fixture.js';

/** Mark every cached job, so a job taken from the cache can be told from one gathered again. */
function mark(cache: Map<string, CachedJob>): void {
  for (const c of cache.values()) c.job = { ...c.job, instruction: `cached: ${c.job.instruction}` };
}

describe('the gather cache', () => {
  it('takes a job whose files did not change from the cache, and gathers one whose receipt changed', async () => {
    const { store, jobs } = fixtureRepo(3);
    const cache = new Map<string, CachedJob>();
    const first = await gatherReport(store, { checks: NO_CHECKS, cache });
    expect([...cache.keys()].sort()).toEqual(jobs.map((j) => j.key).sort());
    mark(cache);
    patchReceipt(store, jobs[1]!.key, { usage: { prompt_tokens: 3, completion_tokens: 4, requests: 1 } });
    const second = await gatherReport(store, { checks: NO_CHECKS, cache });
    const instruction = (k: string) => second.jobs.find((j) => j.key === k)!.instruction;
    expect(instruction(jobs[0]!.key)).toMatch(/^cached: /);
    expect(instruction(jobs[1]!.key)).toBe('Change line 4 of module 1');
    expect(second.jobs.find((j) => j.key === jobs[1]!.key)!.receipt!.usage).toEqual({
      prompt: 3,
      completion: 4,
      requests: 1,
    });
    expect(first.jobs).toHaveLength(3);
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
    const cache = new Map<string, CachedJob>();
    await gatherReport(store, { checks: NO_CHECKS, cache });
    mark(cache);
    change(root, jobs[0]!.key);
    const [job] = (await gatherReport(store, { checks: NO_CHECKS, cache })).jobs;
    expect(job!.instruction).not.toMatch(/^cached: /);
    see(job as never);
  });

  it('asks for checks afresh even for a job taken from the cache', async () => {
    const { store, jobs } = fixtureRepo(1);
    const cache = new Map<string, CachedJob>();
    const table = new Map([[jobs[0]!.key, [check('tests', 'pass')]]]);
    await gatherReport(store, { checks: tableChecks(['tests'], table), cache });
    table.set(jobs[0]!.key, [check('tests', 'fail')]);
    const [job] = (await gatherReport(store, { checks: tableChecks(['tests'], table), cache })).jobs;
    expect(job!.checks.map((c) => c.verdict)).toEqual(['fail']);
  });

  it('ignores a cache written for another renderer or repository, and one that does not parse', async () => {
    const { root, store } = fixtureRepo(2);
    const dir = tempDir('genjob-report-cache-');
    const cache = new Map<string, CachedJob>();
    await gatherReport(store, { checks: NO_CHECKS, cache });
    saveGatherCache(dir, cacheId('renderer-a', root), cache);
    expect(loadGatherCache(dir, cacheId('renderer-a', root)).size).toBe(2);
    expect(loadGatherCache(dir, cacheId('renderer-b', root)).size).toBe(0);
    expect(loadGatherCache(dir, cacheId('renderer-a', `${root}-other`)).size).toBe(0);
    // the trust file is part of it: a signer may now be trusted, or no longer
    writeFileSync(join(root, 'genjob-trust.json'), '{"schema":"genjob/trust@1","keys":[]}\n');
    expect(loadGatherCache(dir, cacheId('renderer-a', root)).size).toBe(0);
    writeFileSync(join(dir, CACHE_FILE), '{"id": broken');
    expect(loadGatherCache(dir, cacheId('renderer-a', root)).size).toBe(0);
  });
});
