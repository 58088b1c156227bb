// Write a report directory incrementally: index.html, jobs/<key>.html, logs/<sha256>.html. Each page
// ends with the sha256 of what it was rendered from (its model and the renderer's identity); a page whose
// last line already names that digest is left alone, so a second report rewrites only what changed
// (page-file.ts reads and writes them). Job pages come first, the index last, so the index never links
// to a page not yet written. Pages of jobs no longer shown are removed; other files are never touched.
import { lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, sep } from 'node:path';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { SHA256_HEX, sha256Hex } from '../core/sha256.js';
import { sweepStaleTemps } from '../store/durable.js';
import type { Store } from '../store/store.js';
import type { Assets } from './assets.js';
import { ReportBytes } from './bytes.js';
import { jobPageBytes } from './job-bytes.js';
import type { ReportModel } from './model.js';
import { renderUndrawn } from './page.js';
import { PAGE_TEMP, pageFingerprint, WriteQueue, writePage } from './page-file.js';
import { renderIndex } from './render-index.js';
import { renderJob } from './render-job.js';
import { renderLog } from './render-log.js';
import { type ReportCache, sameStamp, stampOf } from './report-cache.js';

export interface WriteResult {
  dir: string;
  index: string;
  /** Pages written, relative to dir, in the order written. */
  written: string[];
  unchanged: number;
  /** Pages removed because their job or log is no longer in the report. */
  removed: string[];
  /** Pages that could not be drawn (relative to dir) and why; each was written as a note saying so. */
  undrawn: Array<{ page: string; why: string }>;
}

const PAGE = /^[0-9a-f]{64}\.html$/;
/**
 * The digest of what a page is rendered from. JSON.stringify, not canonical JSON: the model is built by
 * genjob's own code in a fixed key order, and a change of that code changes renderId anyway.
 */
export function fingerprint(assets: Assets, page: string, model: unknown): string {
  return sha256Hex(JSON.stringify({ render: assets.renderId, page, model }));
}

function makeDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw IoError.wrap('mkdir', dir, err);
  }
}

/**
 * Refuse (EGJ_REPORT_DIR) a `dir` that is there but is not a real directory: a symbolic link (a branch can
 * commit one in .gen/report/) would send the pages, and the removal of old ones, wherever it points.
 */
export function refuseLinkedDir(dir: string): void {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (st !== undefined && !st.isDirectory())
    throw new UsageError(
      'EGJ_REPORT_DIR',
      `${dir}: ${st.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}; a report writes only into real directories of its own (remove it, or choose another --out)`,
    );
}

/** Refuse a directory whose index.html genjob did not write: the report would overwrite someone's page. */
function refuseForeign(dir: string): void {
  const index = join(dir, 'index.html');
  let present = true;
  try {
    lstatSync(index);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw IoError.wrap('stat', index, err);
    present = false;
  }
  if (present && typeof pageFingerprint(index) !== 'string')
    throw new UsageError(
      'EGJ_REPORT_DIR',
      `${index}: not a page of a genjob report; choose another --out (a report never overwrites other files)`,
    );
}

function prune(
  dir: string,
  keep: ReadonlySet<string>,
  sub: string,
  removed: string[],
  cache?: ReportCache,
): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    throw IoError.wrap('readdir', dir, err);
  }
  for (const name of names.sort())
    if (!keep.has(name) && PAGE.test(name)) {
      rmSync(join(dir, name), { force: true });
      removed.push(`${sub}/${name}`);
      cache?.dropPage(`${sub}/${name}`);
    }
}

/**
 * `cache`: the pages' stamps and digests from the last report here (an untouched page is known by an lstat);
 * `bytes`: the gather's finder, holding the bytes it already read.
 */
export async function writeReport(
  store: Store,
  model: ReportModel,
  dir: string,
  assets: Assets,
  cache?: ReportCache,
  bytes = new ReportBytes(store),
): Promise<WriteResult> {
  makeDir(dir);
  refuseForeign(dir);
  const jobsDir = join(dir, 'jobs');
  const logsDir = join(dir, 'logs');
  refuseLinkedDir(jobsDir);
  refuseLinkedDir(logsDir);
  makeDir(jobsDir);
  makeDir(logsDir);
  // temp files a report that died left (never a live one's, never a name genjob's pages do not use)
  sweepStaleTemps(store, undefined, undefined, [dir, jobsDir, logsDir], PAGE_TEMP);
  const written: string[] = [];
  let unchanged = 0;
  const undrawn = new Map<string, string>();
  const queue = new WriteQueue();
  const page = async (file: string, inDir: string, name: string, fp: string, render: () => string) => {
    const stamp = stampOf(file);
    const known = cache?.pages.get(name);
    // a page the cache knows is trusted while its stamp holds, and rewritten once anything touched it;
    // one it does not know is written again: its last line could be copied onto any text (a branch can
    // commit the report's directory), so only this user's sealed cache vouches for a page
    const now = stamp === '-' ? undefined : known && sameStamp(known[0], stamp) ? known[1] : null;
    if (now === fp) {
      unchanged += 1;
      cache?.setPage(name, stamp, fp);
      return;
    }
    let text: string;
    try {
      text = render();
    } catch (err) {
      if (err instanceof IoError) throw err; // a disk that fails decides nothing: the report ends (EGJ_IO)
      // one page that cannot be drawn never sinks the others: a note in its place, its row says why
      const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      undrawn.set(name, why);
      text = renderUndrawn({ title: `genjob ${name}`, why, assets, fingerprint: fp });
    }
    written.push(name);
    await queue.add(async () => {
      await writePage(file, inDir, text, now !== undefined);
      // a note in place of a page is drawn again by the next report: no cache entry vouches for it
      if (undrawn.has(name)) cache?.dropPage(name);
      else cache?.setPage(name, stampOf(file), fp);
    });
  };

  const jobPages = new Set<string>();
  const logs = new Set<string>();
  const jobPrints: string[] = [];
  for (const job of model.jobs) {
    const name = `${job.key}.html`;
    jobPages.add(name);
    // a job taken whole from the cache has the page digest it had: no need to serialise and hash it again
    const fp = cache?.printOf(job) ?? fingerprint(assets, 'job', job);
    cache?.setPrint(job, fp);
    jobPrints.push(fp);
    // a page's name has no separator: no path.join per job
    await page(`${jobsDir}${sep}${name}`, jobsDir, `jobs/${name}`, fp, () =>
      renderJob(job, jobPageBytes(bytes, job), assets, fp),
    );
    for (const c of job.checks)
      for (const a of c.attempts) if (a.log && SHA256_HEX.test(a.log)) logs.add(a.log);
  }
  for (const sha of [...logs].sort()) {
    const found = bytes.log(sha);
    const fp = fingerprint(assets, 'log', { sha, found: found.kind });
    await page(join(logsDir, `${sha}.html`), logsDir, `logs/${sha}.html`, fp, () =>
      renderLog(sha, found, assets, fp),
    );
  }
  await queue.drain();
  const removed: string[] = [];
  prune(jobsDir, jobPages, 'jobs', removed, cache);
  prune(logsDir, new Set([...logs].map((l) => `${l}.html`)), 'logs', removed, cache);
  const index = join(dir, 'index.html');
  // the index shows a part of each job: the job pages' digests stand for the jobs
  const undrawnJobs = new Map<string, string>();
  for (const [name, why] of undrawn) {
    const key = /^jobs\/([0-9a-f]{64})\.html$/.exec(name)?.[1];
    if (key) undrawnJobs.set(key, why);
  }
  const fp = fingerprint(assets, 'index', { ...model, jobs: jobPrints, undrawn: [...undrawnJobs] });
  await page(index, dir, 'index.html', fp, () => renderIndex(model, assets, fp, undrawnJobs));
  await queue.drain();
  return {
    dir,
    index,
    written,
    unchanged,
    removed,
    undrawn: [...undrawn].map(([page, why]) => ({ page, why })),
  };
}
