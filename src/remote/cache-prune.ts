// Retention on the generator host: remove result entries older than the window, and what crashed
// requests left: scratch workspaces and half-built entries (<cache>-work/), tmp/ and quarantine/.
// Never an entry being generated or served: one whose lock is held or whose outbox record
// (started/) stands is skipped, and the leftovers are swept only while no lock at all is held.
import { lstat, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResultCache } from './result-cache.js';

export interface CachePruned {
  entries: string[];
  leftovers: string[];
  bytes: number;
  skipped_locked: string[];
}

async function ls(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

/** Bytes under `path`, never through a link (a crashed workspace may hold one to anywhere, or to itself). */
async function size(path: string): Promise<number> {
  try {
    const st = await lstat(path);
    if (!st.isDirectory()) return st.size;
    let n = 0;
    for (const name of await ls(path)) n += await size(join(path, name));
    return n;
  } catch {
    return 0;
  }
}

async function mtime(path: string): Promise<number> {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

export async function pruneCache(
  cache: ResultCache,
  olderThanMs: number,
  opts: { dryRun?: boolean; now?: number } = {},
): Promise<CachePruned> {
  const now = opts.now ?? Date.now();
  const cutoff = now - olderThanMs;
  const locks = new Set(
    (await ls(join(cache.dir, 'locks'))).filter((n) => n.endsWith('.lock')).map((n) => n.slice(0, -5)),
  );
  const started = new Set(
    (await ls(join(cache.dir, 'started'))).filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)),
  );
  const out: CachePruned = { entries: [], leftovers: [], bytes: 0, skipped_locked: [] };
  for (const name of await ls(join(cache.dir, 'results'))) {
    const dir = cache.entryDir(name);
    if ((await mtime(join(dir, 'result.json'))) >= cutoff && (await mtime(dir)) >= cutoff) continue;
    // a held lock or an outbox record (started/<name>.json): being generated or served right now
    if (locks.has(name) || started.has(name)) {
      out.skipped_locked.push(name);
      continue;
    }
    out.bytes += await size(dir);
    out.entries.push(name);
    if (!opts.dryRun) {
      // set aside first, so a reader sees the whole entry or none of it
      const aside = join(cache.dir, 'tmp', `prune-${name}-${process.pid}`);
      try {
        const { rename } = await import('node:fs/promises');
        await rename(dir, aside);
        await rm(aside, { recursive: true, force: true });
      } catch {
        // gone meanwhile
      }
    }
  }
  if (locks.size === 0) {
    const leftoverCutoff = Math.min(cutoff, now - 3_600_000);
    const places: Array<[string, string]> = [
      ['work', cache.workDir],
      ['tmp', join(cache.dir, 'tmp')],
      ['quarantine', join(cache.dir, 'quarantine')],
    ];
    for (const [sub, dir] of places) {
      for (const name of await ls(dir)) {
        const path = join(dir, name);
        if ((await mtime(path)) >= leftoverCutoff) continue;
        out.bytes += await size(path);
        out.leftovers.push(`${sub}/${name}`);
        if (!opts.dryRun) await rm(path, { recursive: true, force: true });
      }
    }
  }
  return out;
}
