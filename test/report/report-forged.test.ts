// A branch can commit anything under .gen/, the report's default directory included: a forged cache
// file or a forged page must never reach the reviewer as fact (built CLI). The cache's lines count only
// when sealed under the user's own secret (kept in $XDG_CACHE_HOME/genjob, outside every repository), so
// an edited entry, one that stamps nothing, or a whole cache sealed by another user's genjob is thrown
// away and the jobs are gathered from their files; and a page no sealed entry vouches for is written
// again, even when its last line names the right digest.
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ReportCache } from '../../src/report/report-cache.js';
import { VERSION } from '../../src/version.js';
import { PKG, runCli } from '../e2e/helpers.js';
import { fixtureRepo } from './fixture.js';

const FORGED = 'FORGED-BY-THE-BRANCH';

function report(root: string, cacheHome: string, args: readonly string[] = []) {
  return runCli(['report', '--json', ...args], { cwd: root, env: { XDG_CACHE_HOME: cacheHome } });
}

type Entry = { j?: { stamps: unknown[]; print?: string; job: Record<string, unknown> } };

/** The renderer's identity as the built CLI computes it (its version, its assets, its code): anyone can. */
function builtRenderId(): string {
  const dist = join(PKG, 'dist');
  const css = readFileSync(join(dist, 'report-assets', 'report.css'), 'utf8');
  const js = readFileSync(join(dist, 'report-assets', 'report.js'), 'utf8');
  return createHash('sha256')
    .update(`genjob ${VERSION}\0${css}\0${js}\0`)
    .update(readFileSync(join(dist, 'genjob.cjs')))
    .digest('hex');
}

/** The cache file's lines: its header, then the entries of every line (each line's seal dropped). */
function cacheLines(file: string): { head: string; entries: Entry[] } {
  const [head, ...rest] = readFileSync(file, 'utf8').trimEnd().split('\n');
  return { head: head!, entries: rest.flatMap((l) => JSON.parse(l.replace(/^[0-9a-f]{32} /, ''))) };
}

/**
 * Every cached job claims FORGED as its instruction (and names no page digest, so its page is drawn again);
 * with `stampless`, it stamps nothing, so it would always look fresh.
 */
function forge(entries: Entry[], stampless: boolean): Entry[] {
  return entries.map((e) =>
    e.j
      ? {
          j: {
            ...e.j,
            print: undefined,
            stamps: stampless ? [] : e.j.stamps,
            job: { ...e.j.job, instruction: FORGED },
          },
        }
      : e,
  );
}

/** Each job page's text. */
function pages(root: string, keys: readonly string[]): string[] {
  return keys.map((k) => readFileSync(join(root, '.gen', 'report', 'jobs', `${k}.html`), 'utf8'));
}

describe('a report directory committed by the branch under review', () => {
  it('forged: an edited cache entry that stamps nothing is not read; the job shows what its files say', async () => {
    const { root, jobs } = fixtureRepo(2);
    const home = join(root, '..', 'cache-reviewer');
    expect((await report(root, home)).exitCode).toBe(0);
    const file = join(root, '.gen', 'report', '.report-cache.json');
    const { head, entries } = cacheLines(file);
    // the header is the reviewer's own; only the entries are the branch's
    writeFileSync(file, `${head}\n${JSON.stringify(forge(entries, true))}\n`);
    const r = await report(root, home);
    expect(r.exitCode).toBe(0);
    for (const text of pages(
      root,
      jobs.map((j) => j.key),
    )) {
      expect(text).not.toContain(FORGED);
      expect(text).toMatch(/Change line 4 of module \d/);
    }
    expect(readFileSync(join(root, '.gen', 'report', 'index.html'), 'utf8')).not.toContain(FORGED);
  });

  it("forged: a cache sealed by another user's genjob (the branch author's own secret) is not read", async () => {
    const { root, jobs } = fixtureRepo(2);
    const author = join(root, '..', 'cache-author');
    expect((await report(root, author)).exitCode).toBe(0);
    // the author seals forged entries with the secret their own genjob made: every seal is valid for them
    const secret = Buffer.from(readFileSync(join(author, 'genjob', 'secret'), 'utf8').trim(), 'hex');
    const id = ReportCache.idOf(builtRenderId(), root);
    const file = join(root, '.gen', 'report', '.report-cache.json');
    const { head, entries } = cacheLines(file);
    const json = JSON.stringify(forge(entries, false));
    const sealed = [`${ReportCache.seal(secret, id, json)} ${json}`];
    writeFileSync(file, `${[head, ...sealed].join('\n')}\n`);
    // the author's genjob would show the forgery: the seals are right for that secret
    expect((await report(root, author)).exitCode).toBe(0);
    expect(pages(root, [jobs[0]!.key])[0]).toContain(FORGED);
    // the reviewer's would not
    writeFileSync(file, `${[head, ...sealed].join('\n')}\n`);
    const r = await report(root, join(root, '..', 'cache-reviewer'));
    expect(r.exitCode).toBe(0);
    for (const text of pages(
      root,
      jobs.map((j) => j.key),
    ))
      expect(text).not.toContain(FORGED);
  });

  it('forged: a job page carrying the true last line, with no cache to vouch for it, is written again', async () => {
    const { root, jobs } = fixtureRepo(2);
    const home = join(root, '..', 'cache-reviewer');
    // the true page, made elsewhere: its last line names the digest the reviewer's report will compute
    expect(
      (await report(root, join(root, '..', 'cache-elsewhere'), ['--out', join(root, '..', 'true')])).exitCode,
    ).toBe(0);
    expect((await report(root, home)).exitCode).toBe(0);
    const key = jobs[0]!.key;
    const page = join(root, '.gen', 'report', 'jobs', `${key}.html`);
    const truth = readFileSync(join(root, '..', 'true', 'jobs', `${key}.html`), 'utf8');
    const forged = truth.replace(/Change line 4 of module \d/, FORGED);
    expect(forged).not.toBe(truth);
    expect(forged.split('\n').at(-2)).toBe(truth.split('\n').at(-2));
    writeFileSync(page, forged);
    rmSync(join(root, '.gen', 'report', '.report-cache.json'));
    const r = await report(root, home);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).written).toContain(`jobs/${key}.html`);
    expect(readFileSync(page, 'utf8')).toBe(truth);
  });
});
