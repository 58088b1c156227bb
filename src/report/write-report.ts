// Write a report directory incrementally: index.html, jobs/<key>.html, logs/<sha256>.html. Each page
// ends with the sha256 of what it was rendered from (its model and the renderer's identity); a page whose
// last line already names that digest is left alone, so a second report rewrites only what changed.
// Pages are written to a temp file and renamed over the old one (a reader sees a whole page or the old
// one); they are not fsynced: a report is derived data, and a page torn by a crash lacks its last line,
// so it never matches and the next report writes it again. Job pages come first, the index last, so the
// index never links to a page not yet written. Pages of jobs no longer shown are removed.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../core/canonical-json.js';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { SHA256_HEX, sha256Hex } from '../core/sha256.js';
import type { Store } from '../store/store.js';
import type { Assets } from './assets.js';
import { findLog } from './bytes.js';
import { jobPageBytes } from './job-bytes.js';
import type { ReportModel } from './model.js';
import { FINGERPRINT_PREFIX, fingerprintLine } from './page.js';
import { renderIndex } from './render-index.js';
import { renderJob } from './render-job.js';
import { renderLog } from './render-log.js';

export interface WriteResult {
  dir: string;
  index: string;
  /** Pages written, relative to dir, in the order written. */
  written: string[];
  unchanged: number;
  /** Pages removed because their job or log is no longer in the report. */
  removed: string[];
}

const PAGE = /^[0-9a-f]{64}\.html$/;
const LINE_BYTES = Buffer.byteLength(fingerprintLine('0'.repeat(64)));

/** The digest a page's last line names, or null (no page, not one of ours, torn). */
export function pageFingerprint(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENXIO') return null;
    throw IoError.wrap('open', file, err);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size < LINE_BYTES) return null;
    const tail = Buffer.alloc(LINE_BYTES);
    const n = readSync(fd, tail, 0, LINE_BYTES, st.size - LINE_BYTES);
    const line = tail.subarray(0, n).toString('utf8');
    const digest = line.slice(FINGERPRINT_PREFIX.length, FINGERPRINT_PREFIX.length + 64);
    return SHA256_HEX.test(digest) && line === fingerprintLine(digest) ? digest : null;
  } catch (err) {
    throw IoError.wrap('read', file, err);
  } finally {
    closeSync(fd);
  }
}

/** Replace `file` with `text`: a temp file beside it, renamed over it. */
function writePage(file: string, dir: string, text: string): void {
  const tmp = join(dir, `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
  try {
    writeFileSync(tmp, text, { flag: 'wx', mode: 0o644 });
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw IoError.wrap('write', file, err);
  }
}

export function fingerprint(assets: Assets, page: string, model: unknown): string {
  return sha256Hex(canonicalJson({ render: assets.renderId, page, model }));
}

function makeDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw IoError.wrap('mkdir', dir, err);
  }
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
  if (present && pageFingerprint(index) === null)
    throw new UsageError(
      'EGJ_REPORT_DIR',
      `${index}: not a page of a genjob report; choose another --out (a report never overwrites other files)`,
    );
}

function prune(dir: string, keep: ReadonlySet<string>, sub: string, removed: string[]): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    throw IoError.wrap('readdir', dir, err);
  }
  for (const name of names.sort())
    if ((PAGE.test(name) && !keep.has(name)) || name.startsWith('.tmp-')) {
      rmSync(join(dir, name), { force: true });
      if (PAGE.test(name)) removed.push(`${sub}/${name}`);
    }
}

export function writeReport(store: Store, model: ReportModel, dir: string, assets: Assets): WriteResult {
  makeDir(dir);
  refuseForeign(dir);
  const jobsDir = join(dir, 'jobs');
  const logsDir = join(dir, 'logs');
  makeDir(jobsDir);
  makeDir(logsDir);
  const written: string[] = [];
  let unchanged = 0;
  const page = (file: string, inDir: string, name: string, fp: string, render: () => string) => {
    if (pageFingerprint(file) === fp) {
      unchanged += 1;
      return;
    }
    writePage(file, inDir, render());
    written.push(name);
  };

  const jobPages = new Set<string>();
  const logs = new Set<string>();
  for (const job of model.jobs) {
    const name = `${job.key}.html`;
    jobPages.add(name);
    const fp = fingerprint(assets, 'job', job);
    page(join(jobsDir, name), jobsDir, `jobs/${name}`, fp, () =>
      renderJob(job, jobPageBytes(store, job), assets, fp),
    );
    for (const c of job.checks)
      for (const a of c.attempts) if (a.log && SHA256_HEX.test(a.log)) logs.add(a.log);
  }
  for (const sha of [...logs].sort()) {
    const found = findLog(store, sha);
    const fp = fingerprint(assets, 'log', { sha, found: found.kind });
    page(join(logsDir, `${sha}.html`), logsDir, `logs/${sha}.html`, fp, () =>
      renderLog(sha, found.kind === 'ok' ? found.bytes.toString('utf8') : null, assets, fp),
    );
  }
  const removed: string[] = [];
  prune(jobsDir, jobPages, 'jobs', removed);
  prune(logsDir, new Set([...logs].map((l) => `${l}.html`)), 'logs', removed);
  const index = join(dir, 'index.html');
  const fp = fingerprint(assets, 'index', model);
  page(index, dir, 'index.html', fp, () => renderIndex(model, assets, fp));
  return { dir, index, written, unchanged, removed };
}
