// genjob cache prune [--older-than DURATION] [--dry-run] [--cache-dir DIR]: on a generator host,
// remove result entries older than the window and the leftovers of crashed requests (remote/cache-prune.ts).

import { formatBytes } from '../cli/format-bytes.js';
import type { CommandResult } from '../cli/result.js';
import { resultCacheDir } from '../core/cache-dir.js';
import { DEFAULT_RETENTION, parseDuration } from '../core/duration.js';
import { pruneCache } from '../remote/cache-prune.js';
import { ResultCache } from '../remote/result-cache.js';

export async function cachePrune(o: {
  olderThan?: string;
  dryRun?: boolean;
  cacheDir?: string;
}): Promise<CommandResult> {
  const windowMs = parseDuration(o.olderThan ?? DEFAULT_RETENTION);
  const cache = new ResultCache(resultCacheDir(o.cacheDir));
  const r = await pruneCache(cache, windowMs, { dryRun: o.dryRun === true });
  const verb = o.dryRun ? 'would prune' : 'pruned';
  const lines = [
    `${verb} ${r.entries.length} cache entr${r.entries.length === 1 ? 'y' : 'ies'} and ${r.leftovers.length} leftover(s) in ${cache.dir}: ${formatBytes(r.bytes)}`,
  ];
  if (r.skipped_locked.length)
    lines.push(`${r.skipped_locked.length} entr(ies) skipped: being generated or served`);
  return {
    human: lines.join('\n'),
    json: { ok: true, dry_run: o.dryRun === true, cache_dir: cache.dir, ...r },
  };
}
