// Reading the journal: every file of it (journal-segments.ts) merged into one list ordered by `at`
// (a stable sort, so events of one writer keep their order when clocks tie). For one key, gc's rotated
// file (sorted by key) is binary-searched (journal-sorted.ts); the other files' bytes are searched for
// `"key":"<key>"` (Buffer.indexOf, in fixed-size chunks) and only the lines holding it are parsed, so
// `show KEY` costs at most what `grep -c KEY` does over the events since the last gc.
import { read } from 'node:fs';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import { IoError } from '../core/errors.js';
import type { JournalEvent } from './journal.js';
import { journalFiles, liveJournalFiles, ROTATED_JOURNAL } from './journal-segments.js';
import { SORTED_MARKER_EVENT, sortedLinesOf } from './journal-sorted.js';
import { openRegularFile } from './read-record.js';
import type { Store } from './store.js';

// Small enough that the two buffers cost little to touch for the first time (~10 us a 4 KiB page on the
// paravirtualised machines measured: ~20 ms for two 4 MiB buffers) and that a chunk is searched while
// the bytes its read copied are still in a core's cache; large enough that the reads' round trips stay
// few. Over a 175 MB segment, `show` took ~18 ms longer with 4 MiB chunks and ~8 ms with 512 KiB ones.
const CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;
const readAsync = promisify(read);

export type JournalLine = JournalEvent & { at: string };

/** Push the text of each line of buf[0, end) holding `needle` (every line when none) onto `out`. */
function collectLines(buf: Buffer, end: number, needle: Buffer | undefined, out: string[]): void {
  const region = buf.subarray(0, end);
  if (needle === undefined) {
    for (let start = 0; start < end; ) {
      let stop = region.indexOf(NEWLINE, start);
      if (stop === -1) stop = end;
      if (stop > start) out.push(region.toString('utf8', start, stop));
      start = stop + 1;
    }
    return;
  }
  for (let hit = region.indexOf(needle); hit !== -1; ) {
    const start = region.lastIndexOf(NEWLINE, hit) + 1;
    let stop = region.indexOf(NEWLINE, hit);
    if (stop === -1) stop = end;
    out.push(region.toString('utf8', start, stop));
    hit = stop >= end ? -1 : region.indexOf(needle, stop);
  }
}

/**
 * An fd for reading a journal file; undefined when it is gone (renamed by gc or a segment take-over).
 * Not a regular file (a FIFO would block the read for ever, a link may point anywhere): refused,
 * naming it (EGJ_RECORD_UNREADABLE).
 */
function openJournalFile(store: Store, file: string): number | undefined {
  return openRegularFile(store.fs, file)?.fd;
}

/** The lines of one journal file (those holding `needle`, when given); false when it does not exist. */
function scanFile(store: Store, file: string, needle: Buffer | undefined, out: string[]): boolean {
  const { fs } = store;
  const fd = openJournalFile(store, file);
  if (fd === undefined) return false;
  try {
    let buf = Buffer.allocUnsafe(CHUNK_BYTES);
    let filled = 0;
    for (;;) {
      if (filled === buf.length) {
        // one line longer than the buffer: grow it
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, filled);
        buf = bigger;
      }
      const n = fs.readSync(fd, buf, filled, buf.length - filled, null);
      const end = filled + n;
      if (n === 0) {
        collectLines(buf, end, needle, out); // a last line without its newline (torn by a crash)
        return true;
      }
      const whole = buf.lastIndexOf(NEWLINE, end - 1) + 1;
      collectLines(buf, whole, needle, out);
      buf.copy(buf, 0, whole, end);
      filled = end - whole;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * scanFile for a key, with the next chunk read on the thread pool while this one is searched: on two
 * cores the copy out of the page cache and the search overlap, which a synchronous loop cannot do.
 */
async function scanFileOverlapped(
  store: Store,
  file: string,
  needle: Buffer,
  out: string[],
): Promise<boolean> {
  const fd = openJournalFile(store, file);
  if (fd === undefined) return false;
  const readInto = (buf: Buffer, at: number): Promise<number> => {
    const p = readAsync(fd, buf, at, buf.length - at, null).then(
      (r) => r.bytesRead,
      (err: unknown) => {
        throw IoError.wrap('read', file, err);
      },
    );
    p.catch(() => {}); // awaited below; a failure surfaces there
    return p;
  };
  let cur = Buffer.allocUnsafe(CHUNK_BYTES);
  let next = Buffer.allocUnsafe(CHUNK_BYTES);
  let filled = 0; // bytes carried over at the start of `cur`, before the pending read's
  let pending = readInto(cur, 0);
  try {
    for (;;) {
      const n = await pending;
      const end = filled + n;
      if (n === 0) {
        collectLines(cur, end, needle, out); // a last line without its newline (torn by a crash)
        return true;
      }
      const whole = cur.lastIndexOf(NEWLINE, end - 1) + 1;
      if (whole === 0) {
        // no line ends in what was read: read on after it, in a bigger buffer when it is full
        if (end === cur.length) {
          const bigger = Buffer.allocUnsafe(cur.length * 2);
          cur.copy(bigger, 0, 0, end);
          cur = bigger;
        }
        filled = end;
        pending = readInto(cur, filled);
        continue;
      }
      // the partial last line goes to the front of the other buffer, which is read into meanwhile
      if (next.length < cur.length) next = Buffer.allocUnsafe(cur.length);
      cur.copy(next, 0, whole, end);
      filled = end - whole;
      pending = readInto(next, filled);
      collectLines(cur, whole, needle, out);
      [cur, next] = [next, cur];
    }
  } finally {
    await pending.catch(() => {}); // never close the fd under a read still in flight
    store.fs.closeSync(fd);
  }
}

/**
 * The lines of the files `list` names, as `readFile` gives them, each line that is also in
 * an earlier file once: an interrupted gc can leave a line in both a sealed file and the rotated one.
 * Equal lines within one file are distinct events and all kept. A file that went away between the
 * listing and its reading was renamed (by gc, or by a process taking over a segment): `list` is asked
 * once more and the names not read yet are read.
 */
export function uniqueLines(
  store: Store,
  list: () => string[],
  readFile: (file: string, out: string[]) => boolean = (file, out) => scanFile(store, file, undefined, out),
): string[] {
  const firstFile = new Map<string, string>();
  const out: string[] = [];
  const read = new Set<string>();
  let files = list();
  for (let pass = 0; pass < 2 && files.length > 0; pass++) {
    let missed = false;
    for (const file of files) {
      read.add(file);
      const lines: string[] = [];
      if (!readFile(file, lines)) missed = true;
      for (const line of lines) {
        const seenIn = firstFile.get(line);
        if (seenIn === undefined) firstFile.set(line, file);
        else if (seenIn !== file) continue;
        out.push(line);
      }
    }
    files = missed ? list().filter((f) => !read.has(f)) : [];
  }
  return out;
}

/** The journal's events (of one key, when given), oldest first; torn lines from a crash are skipped. */
export function readJournal(store: Store, key?: string): JournalLine[] {
  return journalLines(store, key, new Map());
}

/**
 * The journal's lines of one event, every key's, oldest first: each file searched for the event's name
 * (as readJournal of a key searches for the key), only those lines parsed.
 */
export function readJournalEvent(store: Store, event: string): JournalLine[] {
  return journalLines(store, undefined, new Map(), event);
}

/**
 * Whether the journal holds a line of the key, of `event` (or one of them), at or after `since` (an ISO
 * time): a command's last line, looked for since the life of the key it belongs to began. `lines` are the
 * key's lines when read already (by default they are read now).
 */
export function journalledSince(
  store: Store,
  key: string,
  event: string | readonly string[],
  since: string,
  lines: readonly JournalLine[] = readJournal(store, key),
): boolean {
  const events: readonly string[] = typeof event === 'string' ? [event] : event;
  return lines.some((e) => events.includes(e.event) && typeof e.at === 'string' && e.at >= since);
}

/**
 * readJournal of one key, reading the live files with overlapped reads (scanFileOverlapped) first. The
 * listing is asked again afterwards, as readJournal does: a file gc renamed meanwhile is read then.
 */
export async function readKeyJournal(store: Store, key: string): Promise<JournalLine[]> {
  const needle = Buffer.from(`"key":${JSON.stringify(key)}`);
  const scanned = new Map<string, string[]>();
  for (const file of journalFiles(store)) {
    if (basename(file) === ROTATED_JOURNAL) continue; // binary-searched, not scanned
    const lines: string[] = [];
    if (await scanFileOverlapped(store, file, needle, lines)) scanned.set(file, lines);
  }
  return journalLines(store, key, scanned);
}

/** The events of the journal's files (of `key`), using the lines of files already in `scanned`. */
function journalLines(
  store: Store,
  key: string | undefined,
  scanned: Map<string, string[]>,
  event?: string,
): JournalLine[] {
  const needle =
    key !== undefined
      ? Buffer.from(`"key":${JSON.stringify(key)}`)
      : event !== undefined
        ? Buffer.from(`"event":${JSON.stringify(event)}`)
        : undefined;
  const readFile = (file: string, lines: string[]): boolean => {
    const done = scanned.get(file);
    if (done !== undefined) {
      for (const line of done) lines.push(line);
      return true;
    }
    if (key !== undefined && basename(file) === ROTATED_JOURNAL) {
      const sorted = sortedLinesOf(store, file, key); // gc's file: a binary search, not a scan
      if (sorted !== undefined) {
        lines.push(...sorted);
        return true;
      }
    }
    return scanFile(store, file, needle, lines);
  };
  const out: JournalLine[] = [];
  for (const line of uniqueLines(store, () => journalFiles(store), readFile)) {
    let ev: JournalLine;
    try {
      ev = JSON.parse(line);
    } catch {
      continue; // torn line from a crash
    }
    if (ev === null || typeof ev !== 'object' || ev.event === SORTED_MARKER_EVENT) continue;
    if ((key === undefined || ev.key === key) && (event === undefined || ev.event === event)) out.push(ev);
  }
  const at = (e: JournalLine) => (typeof e.at === 'string' ? e.at : '');
  return out.sort((a, b) => (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : 0));
}

/**
 * When each key's most recent event in the journal's live files happened (ms), reading only the last
 * `tailBytes` of each file: recent activity, at a cost independent of how many jobs .gen/ holds.
 */
export function recentKeyTimes(store: Store, tailBytes = 1 << 20): Map<string, number> {
  const { fs } = store;
  const times = new Map<string, number>();
  for (const file of liveJournalFiles(store)) {
    const fd = openJournalFile(store, file);
    if (fd === undefined) continue; // taken over or sealed by gc meanwhile
    try {
      const size = fs.fstatSync(fd).size;
      const from = Math.max(0, size - tailBytes);
      const buf = Buffer.allocUnsafe(size - from);
      let got = 0;
      while (got < buf.length) {
        const n = fs.readSync(fd, buf, got, buf.length - got, from + got);
        if (n === 0) break;
        got += n;
      }
      // the first line of a tail that starts mid-file is partial: skip it
      const start = from === 0 ? 0 : buf.indexOf(NEWLINE) + 1;
      const lines: string[] = [];
      collectLines(buf.subarray(start, got), got - start, undefined, lines);
      for (const line of lines) {
        let ev: { key?: unknown; at?: unknown };
        try {
          ev = JSON.parse(line);
        } catch {
          continue; // torn
        }
        if (typeof ev.key !== 'string' || typeof ev.at !== 'string') continue;
        const at = Date.parse(ev.at);
        if (at > (times.get(ev.key) ?? Number.NEGATIVE_INFINITY)) times.set(ev.key, at);
      }
    } finally {
      fs.closeSync(fd);
    }
  }
  return times;
}
