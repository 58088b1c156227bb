// Where the journal lives: one segment file per writing process under .gen/journal.d/, named
// <host>-<pid>-<start>.jsonl. O_APPEND is atomic on a local filesystem but not across the clients
// of a network one (two sshfs mounts tore lines), so no two processes ever append to one file.
// A process's first event creates its segment with O_EXCL, or takes over (by rename, which only one
// taker wins) the segment of a process of this host that is gone, so segments stay about as many as
// the processes that run at once, not as many as ever ran. Readers merge every file (journal-read.ts).
import { constants } from 'node:fs';
import { join } from 'node:path';
import { errnoOf, IoError } from '../core/errors.js';
import { lostToExisting, readdirOrEmpty } from './durable.js';
import { ownerGone, thisProcess } from './process-identity.js';
import type { Store } from './store.js';

export const SEGMENT_DIR = 'journal.d';
/** gc's merged segment of older events (journal-compact.ts). */
export const ROTATED_JOURNAL = 'journal.1.jsonl';
/** Files gc set aside and had not merged yet when it was interrupted; readers include them. */
export const COMPACTING = /^journal\.compacting-\d+(-\d+)?\.jsonl$/;
/** <host>-<pid>-<start>[-<n>].jsonl; the host's dashes are written as `_`, so the fields never blur. */
const SEGMENT = /^([A-Za-z0-9._]+)-(\d+)-(\d+)(?:-\d+)?\.jsonl$/;

function segmentHost(): string {
  return thisProcess().host.replace(/[^A-Za-z0-9._]/g, '_') || 'host';
}

/** This process's segment per .gen/ (a process may write to several stores: tests, apply --all). */
const mine = new Map<string, string>();

function tryTakeOver(store: Store, dir: string, to: string): boolean {
  const host = segmentHost();
  for (const name of readdirOrEmpty(store, dir)) {
    const m = SEGMENT.exec(name);
    if (!m || m[1] !== host) continue;
    if (!ownerGone({ host: thisProcess().host, pid: Number(m[2]), start: Number(m[3]) })) continue;
    // only a file a process appended to: a branch can commit a link under a gone process's name, and
    // the taker appends to what it took (readers refuse the link: journal-read.ts)
    if (!isRegularFile(store, join(dir, name))) continue;
    try {
      store.fs.renameSync(join(dir, name), to);
      return true;
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw IoError.wrap('rename', join(dir, name), err);
      // another process took it first: try the next
    }
  }
  return false;
}

/**
 * A segment taken over from a process that died mid-append may end in half a line: a newline ends it
 * there (readers skip it as torn), or the first line appended after it would join it and be lost too.
 */
function endTornLine(store: Store, path: string): void {
  const { fs } = store;
  let fd: number;
  try {
    fd = fs.openSync(path, constants.O_RDWR | constants.O_APPEND);
  } catch (err) {
    throw IoError.wrap('open', path, err);
  }
  try {
    const size = fs.fstatSync(fd).size;
    const last = Buffer.alloc(1);
    if (size > 0 && fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a) {
      fs.writeSync(fd, '\n');
      fs.fsyncSync(fd);
    }
  } catch (err) {
    throw IoError.wrap('append', path, err);
  } finally {
    fs.closeSync(fd);
  }
}

function isRegularFile(store: Store, path: string): boolean {
  try {
    return store.fs.lstatSync(path).isFile();
  } catch {
    return false; // gone: another taker had it
  }
}

/** This process's segment file, created (or taken over) on first use; open it with openSegment. */
function segmentPath(store: Store): { path: string; fresh: boolean } {
  const known = mine.get(store.layout.gen);
  if (known !== undefined) return { path: known, fresh: false };
  const dir = store.layout.dir(SEGMENT_DIR);
  try {
    store.fs.mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw IoError.wrap('mkdir', dir, err);
  }
  const { pid, start } = thisProcess();
  const base = `${segmentHost()}-${pid}-${start}`;
  const first = join(dir, `${base}.jsonl`);
  if (tryTakeOver(store, dir, first)) {
    endTornLine(store, first);
    mine.set(store.layout.gen, first);
    return { path: first, fresh: false };
  }
  return { path: first, fresh: true };
}

/** An fd open for appending to this process's segment (O_EXCL the first time: the name is ours alone). */
export function openSegment(store: Store): { fd: number; path: string } {
  const { fs } = store;
  const { path, fresh } = segmentPath(store);
  const append = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;
  if (!fresh) {
    try {
      return { fd: fs.openSync(path, append, 0o644), path };
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
      // journal.d/ itself was removed (by hand): start over with a fresh segment
      mine.delete(store.layout.gen);
      return openSegment(store);
    }
  }
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? path : path.replace(/\.jsonl$/, `-${n}.jsonl`);
    try {
      const fd = fs.openSync(candidate, append | constants.O_EXCL, 0o644);
      mine.set(store.layout.gen, candidate);
      return { fd, path: candidate };
    } catch (err) {
      if (!lostToExisting(store, candidate, err) || n >= 100) throw err;
    }
  }
}

/**
 * Every file that holds journal events, in a fixed order (oldest kinds first): the rotated segment,
 * leftovers of an interrupted gc, the single journal.jsonl of genjob 0.1, then the segments by name.
 */
export function journalFiles(store: Store): string[] {
  const gen = store.layout.gen;
  const compacting = readdirOrEmpty(store, gen)
    .filter((n) => COMPACTING.test(n))
    .sort();
  const dir = store.layout.dir(SEGMENT_DIR);
  const segments = readdirOrEmpty(store, dir)
    .filter((n) => n.endsWith('.jsonl') && !n.startsWith('.'))
    .sort();
  return [
    join(gen, ROTATED_JOURNAL),
    ...compacting.map((n) => join(gen, n)),
    store.layout.journal,
    ...segments.map((n) => join(dir, n)),
  ];
}

/** The files new events go to (what gc seals): the legacy journal.jsonl and every segment. */
export function liveJournalFiles(store: Store): string[] {
  const dir = store.layout.dir(SEGMENT_DIR);
  return [
    store.layout.journal,
    ...readdirOrEmpty(store, dir)
      .filter((n) => n.endsWith('.jsonl') && !n.startsWith('.'))
      .sort()
      .map((n) => join(dir, n)),
  ];
}
