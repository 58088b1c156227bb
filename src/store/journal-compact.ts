// Journal rotation for gc: the live journal.jsonl is renamed aside (new appends start a fresh file at
// once; O_APPEND writers that opened the old one finish into it, so we wait until its size settles),
// then its events and the older segment's are merged into journal.1.jsonl (replace recipe), dropping
// only events older than the window of keys gc has pruned. Events of jobs still alive are all kept.
// A crash leaves a journal.compacting-*.jsonl that readers include and the next gc merges.
import { join } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { fsyncDir, readdirOrEmpty, readIfExists, replaceFile } from './durable.js';
import type { Store } from './store.js';
import { tombstoneKeys } from './tombstone.js';

export const ROTATED_JOURNAL = 'journal.1.jsonl';
const COMPACTING = /^journal\.compacting-\d+\.jsonl$/;

/** The journal's files, oldest first: the rotated segment, leftovers of an interrupted rotation, the live file. */
export function journalFiles(store: Store): string[] {
  const gen = store.layout.gen;
  let names: string[] = [];
  try {
    names = store.fs
      .readdirSync(gen)
      .filter((n) => COMPACTING.test(n))
      .sort();
  } catch {
    // no .gen/ yet
  }
  return [join(gen, ROTATED_JOURNAL), ...names.map((n) => join(gen, n)), store.layout.journal];
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function sizeOf(store: Store, file: string): number {
  try {
    return store.fs.statSync(file).size;
  } catch {
    return -1;
  }
}

function liveKeys(store: Store): Set<string> {
  const live = new Set<string>();
  for (const s of ['queue', 'running', 'received'])
    for (const n of readdirOrEmpty(store, store.layout.dir(s)))
      if (n.endsWith('.json')) live.add(n.slice(0, -5));
  return live;
}

export function compactJournal(
  store: Store,
  pruned: ReadonlySet<string>,
  cutoffMs: number,
  settleMs = 25,
): { kept: number; dropped: number } {
  const gen = store.layout.gen;
  const sealed = join(gen, `journal.compacting-${process.pid}.jsonl`);
  try {
    store.fs.renameSync(store.layout.journal, sealed);
    fsyncDir(store, gen);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
  // an append that opened the old file just before the rename lands in it: wait until it is quiet
  let settled = sizeOf(store, sealed);
  for (let last = -2; settled !== last; last = settled, settled = sizeOf(store, sealed))
    if (settleMs > 0) pause(settleMs);

  const live = liveKeys(store);
  const drop = new Set([...pruned, ...tombstoneKeys(store)].filter((k) => !live.has(k)));
  const sources = journalFiles(store).filter((f) => f !== store.layout.journal);
  const seen = new Set<string>();
  const kept: string[] = [];
  let dropped = 0;
  for (const file of sources) {
    const text = readIfExists(store, file)?.toString('utf8') ?? '';
    for (const line of text.split('\n')) {
      if (!line || seen.has(line)) continue;
      seen.add(line);
      let ev: { key?: unknown; at?: unknown };
      try {
        ev = JSON.parse(line);
      } catch {
        continue; // a torn line from a crash
      }
      if (typeof ev.key === 'string' && drop.has(ev.key) && Date.parse(String(ev.at)) < cutoffMs) {
        dropped += 1;
        continue;
      }
      kept.push(line);
    }
  }
  replaceFile(store, join(gen, ROTATED_JOURNAL), Buffer.from(kept.length ? `${kept.join('\n')}\n` : ''));
  for (const file of sources) {
    if (file === join(gen, ROTATED_JOURNAL)) continue;
    // a late append after all: keep the file (readers include it; the next gc merges it, deduplicated)
    if (file === sealed && sizeOf(store, sealed) !== settled) continue;
    store.fs.rmSync(file, { force: true });
  }
  fsyncDir(store, gen);
  return { kept: kept.length, dropped };
}
