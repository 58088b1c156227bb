// genjob report [--run NAME | KEY...] [--out DIR] [--open]: a static review site of the jobs (all, a
// run's, or the keys named) written to DIR (default .gen/report/): index.html and one page per job,
// every asset inlined, no server, no network. Only pages whose inputs changed are written again.
// Reads .gen/ and never changes it, apart from the default report directory inside it. What the last
// report found is kept in DIR's cache file, sealed under the user's secret in $XDG_CACHE_HOME/genjob.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configForLooking } from '../cli/look-config.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { pathExists } from '../core/path-exists.js';
import { userSecret } from '../remote/cache-mac.js';
import { loadAssets } from '../report/assets.js';
import { ReportBytes } from '../report/bytes.js';
import { checkSource } from '../report/check-source.js';
import { gatherReport } from '../report/gather.js';
import { ReportCache } from '../report/report-cache.js';
import { refuseLinkedDir, writeReport } from '../report/write-report.js';
import type { Store } from '../store/store.js';

export interface ReportOptions extends CommonOptions {
  run?: string;
  keys?: string[];
  out?: string;
  open?: boolean;
}

/** The report directory when --out is not given: inside .gen/, so it is never committed. */
export const DEFAULT_REPORT_DIR = 'report';

/** The run `name` as run-source.ts reads it (the run plane's modules are loaded only for a run's report). */
async function runOf(store: Store, name: string, secret: Buffer | null) {
  const [{ readRun }, { checkReader }] = await Promise.all([
    import('../report/run-source.js'),
    import('./gate.js'),
  ]);
  return readRun(store, name, checkReader, secret);
}

/** Ask the desktop to show `file` ($BROWSER, else xdg-open or open); a failure is said, never fatal. */
function openInBrowser(file: string): Promise<string | null> {
  const command = process.env.BROWSER || (process.platform === 'darwin' ? 'open' : 'xdg-open');
  // `BROWSER='firefox --new-window'` is a program and its arguments (split at spaces, as such variables
  // are), unless the whole value names a file (a path with a space in it)
  const [program, ...args] = existsSync(command) ? [command] : command.trim().split(/\s+/);
  return new Promise((done) => {
    const child = spawn(program!, [...args, file], { detached: true, stdio: 'ignore' });
    child.once('error', (err) => done(`could not start ${command} (${err.message}); open ${file} yourself`));
    child.once('spawn', () => {
      child.unref();
      done(null);
    });
  });
}

export async function report(o: ReportOptions): Promise<CommandResult> {
  const keys = o.keys ?? [];
  if (o.run !== undefined && keys.length > 0)
    throw new UsageError('EGJ_USAGE', 'report takes --run NAME or keys, not both');
  const store = lookStore(o);
  const configWarning = await configForLooking(store, 'report');
  if (!pathExists(store.layout.gen))
    throw new UsageError(
      'EGJ_USAGE',
      `${store.layout.gen}: no .gen/ here, so nothing to report; mint a job first`,
    );
  // none (no writable cache directory): the report is made without a cache, as right and slower
  const secret = await userSecret();
  const run = o.run === undefined ? undefined : await runOf(store, o.run, secret);
  const dir = o.out === undefined ? join(store.layout.gen, DEFAULT_REPORT_DIR) : resolve(o.out);
  // the default directory lies in .gen/, which a branch can commit into: never through a link there
  if (o.out === undefined) refuseLinkedDir(dir);
  const assets = loadAssets();
  const cache = secret
    ? ReportCache.load(dir, ReportCache.idOf(assets.renderId, store.root), secret)
    : undefined;
  const bytes = new ReportBytes(store);
  const model = await gatherReport(store, { keys, run, checks: await checkSource(store.root), cache, bytes });
  const written = await writeReport(store, model, dir, assets, cache, bytes);
  await cache?.save(dir);
  const openProblem = o.open ? await openInBrowser(written.index) : null;
  const lines = [
    written.index,
    `${model.jobs.length} job(s): ${written.written.length} page(s) written, ${written.unchanged} unchanged, ${written.removed.length} removed`,
  ];
  const notes = configWarning ? [configWarning] : [];
  notes.push(
    ...model.skipped.map((f) => `report: ${join(store.layout.gen, f)}: not named by a key, so not shown\n`),
  );
  for (const u of written.undrawn)
    notes.push(`report: ${join(dir, u.page)}: could not be drawn (${u.why}); a note stands in its place\n`);
  if (openProblem) notes.push(`genjob: ${openProblem}\n`);
  return {
    human: lines.join('\n'),
    stderr: notes.length > 0 ? notes.join('') : undefined,
    json: {
      ok: true,
      dir: written.dir,
      index: written.index,
      jobs: model.jobs.length,
      written: written.written,
      unchanged: written.unchanged,
      removed: written.removed,
      skipped: model.skipped,
      undrawn: written.undrawn,
      opened: o.open === true && openProblem === null,
    },
  };
}
