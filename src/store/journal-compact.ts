// Journal rotation for gc: every file new events go to (each process's segment in journal.d/, and the
// journal.jsonl of genjob 0.1) is renamed aside as journal.compacting-*.jsonl (a writer's next event
// starts a fresh segment at once; an append that opened the old file just before finishes into it, so
// we wait until the sizes settle), then those events and the older rotated segment's are merged into
// journal.1.jsonl (replace recipe), sorted by key and then `at` so that a key's events are found by a
// binary search (journal-sorted.ts), dropping only events older than the window of keys gc has pruned. Events of jobs still alive are all kept. A crash leaves journal.compacting-*.jsonl files
// that readers include and the next gc merges (duplicates removed).
import { join } from 'node:path';
import { errnoOf, IoError } from '../core/errors.js';
import { fsyncDir, readdirOrEmpty, replaceFile } from './durable.js';
import { uniqueLines } from './journal-read.js';
import { COMPACTING, liveJournalFiles, ROTATED_JOURNAL, SEGMENT_DIR } from './journal-segments.js';
import { byKeyThenAt, SORTED_MARKER_EVENT, sortedMarkerLine } from './journal-sorted.js';
import type { Store } from './store.js';
import { tombstoneKeys } from './tombstone.js';

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

/** Rename every live journal file aside under a name no leftover holds; the sealed paths. */
function sealLiveFiles(store: Store): string[] {
  const gen = store.layout.gen;
  const taken = new Set(readdirOrEmpty(store, gen).filter((n) => COMPACTING.test(n)));
  const sealed: string[] = [];
  let n = 0;
  let fromSegments = false;
  for (const file of liveJournalFiles(store)) {
    let name: string;
    do name = `journal.compacting-${process.pid}-${n++}.jsonl`;
    while (taken.has(name));
    try {
      store.fs.renameSync(file, join(gen, name));
      sealed.push(join(gen, name));
      fromSegments ||= file !== store.layout.journal;
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw IoError.wrap('rename', file, err);
    }
  }
  if (sealed.length) fsyncDir(store, gen);
  if (fromSegments) fsyncDir(store, store.layout.dir(SEGMENT_DIR));
  return sealed;
}

/** Sizes of `files` once two looks `settleMs` apart agree (no append still landing in them). */
function settledSizes(store: Store, files: readonly string[], settleMs: number): Map<string, number> {
  const look = () => new Map(files.map((f) => [f, sizeOf(store, f)]));
  let now = look();
  for (;;) {
    if (settleMs > 0) pause(settleMs);
    const next = look();
    if ([...next].every(([f, size]) => now.get(f) === size)) return next;
    now = next;
  }
}

export function compactJournal(
  store: Store,
  pruned: ReadonlySet<string>,
  cutoffMs: number,
  settleMs = 25,
): { kept: number; dropped: number } {
  const gen = store.layout.gen;
  const rotated = join(gen, ROTATED_JOURNAL);
  const sealed = sealLiveFiles(store);
  const settled = settledSizes(store, sealed, settleMs);

  const live = liveKeys(store);
  const drop = new Set([...pruned, ...tombstoneKeys(store)].filter((k) => !live.has(k)));
  const leftovers = readdirOrEmpty(store, gen)
    .filter((n) => COMPACTING.test(n))
    .sort()
    .map((n) => join(gen, n));
  const kept: Array<{ line: string; key: string; at: string }> = [];
  let dropped = 0;
  for (const line of uniqueLines(store, () => [rotated, ...leftovers])) {
    let ev: { key?: unknown; at?: unknown; event?: unknown };
    try {
      ev = JSON.parse(line);
    } catch {
      continue; // a torn line from a crash
    }
    if (ev?.event === SORTED_MARKER_EVENT) continue; // the old file's first line: a new one is written
    const at = typeof ev?.at === 'string' ? ev.at : '';
    const key = typeof ev?.key === 'string' ? ev.key : '';
    if (key !== '' && drop.has(key) && Date.parse(at) < cutoffMs) {
      dropped += 1;
      continue;
    }
    kept.push({ line, key, at });
  }
  kept.sort(byKeyThenAt); // stable: a writer's ties keep their order
  const text = [sortedMarkerLine(), ...kept.map((k) => k.line)].join('\n');
  replaceFile(store, rotated, Buffer.from(`${text}\n`));
  for (const file of leftovers) {
    // a late append after all: keep the file (readers include it; the next gc merges it, deduplicated)
    if (settled.has(file) && sizeOf(store, file) !== settled.get(file)) continue;
    store.fs.rmSync(file, { force: true });
  }
  fsyncDir(store, gen);
  return { kept: kept.length, dropped };
}
