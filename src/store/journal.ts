// The journal: one JSON object per line, appended for every state transition, to this process's own
// segment under .gen/journal.d/ (journal-segments.ts: appends from several machines sharing .gen/
// never meet in one file). Each line is fsynced so that the reason a job was rejected survives a
// crash. State itself lives in the directories, not here.
import { IoError } from '../core/errors.js';
import { openSegment } from './journal-segments.js';
import type { Store } from './store.js';

export interface JournalEvent {
  event: string;
  key?: string;
  [field: string]: unknown;
}

export { journalledSince, readJournal, readJournalEvent, readKeyJournal } from './journal-read.js';

/**
 * Segments this process failed to append to: the failed write may have left half a line, which the
 * next line would join (and be lost with). The next append starts on a line of its own; a process that
 * died mid-append leaves its segment to a taker that does the same (journal-segments.ts).
 */
const mayEndTorn = new Set<string>();

export function journal(store: Store, event: JournalEvent): void {
  const { fs } = store;
  const text = `${JSON.stringify({ at: new Date().toISOString(), pid: process.pid, ...event })}\n`;
  let opened: { fd: number; path: string };
  try {
    opened = openSegment(store);
  } catch (err) {
    throw IoError.wrap('append', store.layout.dir('journal.d'), err);
  }
  try {
    // an empty line, when the failed write left none, is skipped by readers as any torn one is
    fs.writeSync(opened.fd, Buffer.from(mayEndTorn.has(opened.path) ? `\n${text}` : text));
    fs.fsyncSync(opened.fd);
    mayEndTorn.delete(opened.path);
  } catch (err) {
    mayEndTorn.add(opened.path);
    throw IoError.wrap('append', opened.path, err);
  } finally {
    fs.closeSync(opened.fd);
  }
}
