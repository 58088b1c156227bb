// push's record of what it built (.gen/git-built.json): per key, the material commit's id, the receipt's
// digest, and the receipt file's stat (ino, size, mtime, ctime; numbers, not bigints: a stat of 1,000
// receipts must stay far below a process start) taken before it was read. A later push
// trusts an entry without reading or hashing the receipt when the stat is unchanged and the receipt's
// ctime is older than the record file's own ctime: user space cannot set ctime (a write, chmod or
// rename moves it to "now"), and the fence rules out a replacement within the same clock tick as the
// record (git's "racy" case). The material commit is a pure function of the material, so the record
// holds whatever the local refs do. A cache only: missing or unreadable, push reads every receipt.
import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { readIfExists, replaceFile } from '../store/durable.js';
import type { Store } from '../store/store.js';

export interface Built {
  oid: string;
  receiptSha256: string;
}

export interface BuiltEntry extends Built {
  /** [ino, size, mtimeMs, ctimeMs] of the receipt file. */
  stat: [number, number, number, number];
}

export interface BuiltRecord {
  entries: ReadonlyMap<string, BuiltEntry>;
  fenceCtimeMs: number;
}

/** Far above what a store's keys need (~150 bytes a key); past it the record is ignored and rebuilt. */
const MAX_BUILT_RECORD_BYTES = 256 * 1024 * 1024;

function file(store: Store): string {
  return join(store.layout.gen, 'git-built.json');
}

function stamp(st: Stats): BuiltEntry['stat'] {
  return [st.ino, st.size, st.mtimeMs, st.ctimeMs];
}

/** The receipt's stat, or undefined when there is no regular file (never followed through a link). */
export function receiptStat(store: Store, receipts: string, key: string): Stats | undefined {
  try {
    const st = store.fs.lstatSync(`${receipts}/${key}.json`);
    return st.isFile() ? st : undefined;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

export function loadBuilt(store: Store): BuiltRecord {
  const empty = { entries: new Map<string, BuiltEntry>(), fenceCtimeMs: 0 };
  try {
    const fence = store.fs.lstatSync(file(store)).ctimeMs;
    // a branch may commit .gen/: no link followed, no FIFO waited on, no read without end
    const bytes = readIfExists(store, file(store), MAX_BUILT_RECORD_BYTES);
    if (bytes === undefined) return empty;
    const doc = JSON.parse(bytes.toString('utf8')) as Record<string, BuiltEntry>;
    const entries = new Map<string, BuiltEntry>();
    for (const [key, e] of Object.entries(doc))
      if (typeof e?.oid === 'string' && typeof e.receiptSha256 === 'string' && Array.isArray(e.stat))
        entries.set(key, e);
    return { entries, fenceCtimeMs: fence };
  } catch {
    return empty; // no record yet, or a torn or foreign one: read the receipts
  }
}

/** What was built for `key`, when its receipt provably is the file that was read then. */
export function builtIfUnchanged(record: BuiltRecord, key: string, st: Stats): Built | undefined {
  const e = record.entries.get(key);
  if (e === undefined || !(st.ctimeMs < record.fenceCtimeMs)) return undefined;
  const [ino, size, mtimeMs, ctimeMs] = e.stat;
  return ino === st.ino && size === st.size && mtimeMs === st.mtimeMs && ctimeMs === st.ctimeMs
    ? e
    : undefined;
}

/** Replace the record with `keep` plus these keys (each with the stat taken before its receipt was read). */
export function saveBuilt(
  store: Store,
  keep: ReadonlyMap<string, BuiltEntry>,
  built: ReadonlyArray<{ key: string; oid: string; receiptSha256: string; st: Stats }>,
): void {
  const doc: Record<string, BuiltEntry> = Object.fromEntries(keep);
  for (const b of built) doc[b.key] = { oid: b.oid, receiptSha256: b.receiptSha256, stat: stamp(b.st) };
  replaceFile(store, file(store), Buffer.from(`${JSON.stringify(doc)}\n`));
}
