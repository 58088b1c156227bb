// gc's rotated journal (journal.1.jsonl) is written sorted by key, then by `at`, behind a first line
// that says so. One key's events are then found like look(1) finds a word: a binary search over byte
// offsets (each probe reads the line that starts after the offset) and a short read forward, so
// `show KEY` reads a few KiB of it however many events it holds. A file without the first line
// (written before this order was kept) is scanned instead.
import { openRegularFile } from './read-record.js';
import type { Store } from './store.js';

/** The first line of a key-sorted rotated journal (its `at` is when gc wrote it). */
export const SORTED_MARKER_EVENT = 'journal-sorted';

export function sortedMarkerLine(): string {
  return JSON.stringify({ at: new Date().toISOString(), event: SORTED_MARKER_EVENT, order: ['key', 'at'] });
}

/** The order gc writes: keyless events first, then by key, then by `at` (callers sort stably). */
export function byKeyThenAt(a: { key: string; at: string }, b: { key: string; at: string }): number {
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  return a.at < b.at ? -1 : a.at > b.at ? 1 : 0;
}

/** The first read of a probe: a few lines' worth (events are ~200 bytes); doubled for a longer line. */
const PROBE_BYTES = 4 << 10;
/** Below this many bytes between the bounds, read forward instead of probing again. */
const WINDOW_BYTES = 16 << 10;
const NEWLINE = 0x0a;

function keyOf(line: string): string {
  try {
    const ev = JSON.parse(line) as { key?: unknown };
    return typeof ev?.key === 'string' ? ev.key : '';
  } catch {
    return ''; // never written by gc; sorts with the keyless events
  }
}

class Reader {
  constructor(
    private readonly store: Store,
    private readonly fd: number,
    readonly size: number,
  ) {}

  bytes(at: number, length: number): Buffer {
    const buf = Buffer.allocUnsafe(Math.max(0, Math.min(length, this.size - at)));
    let got = 0;
    while (got < buf.length) {
      const n = this.store.fs.readSync(this.fd, buf, got, buf.length - got, at + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  }

  /** The last bytes read for lineAt: reading forward line by line reads each chunk once. */
  private last: { at: number; buf: Buffer } = { at: 0, buf: Buffer.alloc(0) };

  /** The line that starts at `start` (without its newline), and where the next one starts. */
  lineAt(start: number): { text: string; next: number } {
    const { at, buf: held } = this.last;
    if (start >= at && start < at + held.length) {
      const nl = held.indexOf(NEWLINE, start - at);
      if (nl !== -1) return { text: held.toString('utf8', start - at, nl), next: at + nl + 1 };
    }
    for (let want = PROBE_BYTES; ; want *= 2) {
      const buf = this.bytes(start, want);
      this.last = { at: start, buf };
      const nl = buf.indexOf(NEWLINE);
      if (nl !== -1) return { text: buf.toString('utf8', 0, nl), next: start + nl + 1 };
      if (start + buf.length >= this.size) return { text: buf.toString('utf8'), next: this.size };
    }
  }

  /** The start of the first line that starts at or after `at` (what it read is kept for lineAt). */
  lineStartFrom(at: number): number {
    if (at === 0) return 0;
    for (let from = at - 1; from < this.size; from += PROBE_BYTES) {
      const buf = this.bytes(from, PROBE_BYTES);
      this.last = { at: from, buf };
      const nl = buf.indexOf(NEWLINE);
      if (nl !== -1) return from + nl + 1;
    }
    return this.size;
  }
}

/**
 * The lines of `key` in the key-sorted file `file`, in file order; undefined when the file does not
 * start with the marker line (read it some other way). Nothing when the file does not exist.
 */
export function sortedLinesOf(store: Store, file: string, key: string): string[] | undefined {
  const { fs } = store;
  const opened = openRegularFile(fs, file); // a FIFO or link is refused, not waited on or followed
  if (opened === undefined) return [];
  const { fd } = opened;
  try {
    const r = new Reader(store, fd, opened.size);
    if (r.size === 0) return [];
    const first = r.lineAt(0);
    let marker: { event?: unknown } | undefined;
    try {
      marker = JSON.parse(first.text);
    } catch {
      // not ours
    }
    if (marker?.event !== SORTED_MARKER_EVENT) return undefined;
    // every line starting before `lo` has a key below `key`; every line starting at or after `hi` not
    let lo = first.next;
    let hi = r.size;
    while (hi - lo > WINDOW_BYTES) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const start = r.lineStartFrom(mid);
      if (start >= hi) {
        hi = mid; // no line starts in [mid, hi)
        continue;
      }
      const line = r.lineAt(start);
      if (keyOf(line.text) < key) lo = line.next;
      else hi = start;
    }
    const out: string[] = [];
    for (let at = lo; at < r.size; ) {
      const line = r.lineAt(at);
      const k = keyOf(line.text);
      if (k > key) break;
      if (k === key && line.text !== '') out.push(line.text);
      at = line.next;
    }
    return out;
  } finally {
    fs.closeSync(fd);
  }
}
