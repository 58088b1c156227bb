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

export { readJournal, readKeyJournal } from './journal-read.js';

export function journal(store: Store, event: JournalEvent): void {
  const { fs } = store;
  const line = Buffer.from(
    `${JSON.stringify({ at: new Date().toISOString(), pid: process.pid, ...event })}\n`,
  );
  let opened: { fd: number; path: string };
  try {
    opened = openSegment(store);
  } catch (err) {
    throw IoError.wrap('append', store.layout.dir('journal.d'), err);
  }
  try {
    fs.writeSync(opened.fd, line);
    fs.fsyncSync(opened.fd);
  } catch (err) {
    throw IoError.wrap('append', opened.path, err);
  } finally {
    fs.closeSync(opened.fd);
  }
}
