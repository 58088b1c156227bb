// The journal: one JSON object per line in .gen/journal.jsonl, appended for every state transition.
// O_APPEND makes each short line land whole even with many writers; it is fsynced so that the
// reason a job was rejected survives a crash. State itself lives in the directories, not here.
import { constants } from 'node:fs';
import { IoError } from '../core/errors.js';
import { journalFiles } from './journal-compact.js';
import type { Store } from './store.js';

export interface JournalEvent {
  event: string;
  key?: string;
  [field: string]: unknown;
}

export function journal(store: Store, event: JournalEvent): void {
  const { fs } = store;
  const line = Buffer.from(
    `${JSON.stringify({ at: new Date().toISOString(), pid: process.pid, ...event })}\n`,
  );
  const path = store.layout.journal;
  const fd = fs.openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o644);
  try {
    fs.writeSync(fd, line);
    fs.fsyncSync(fd);
  } catch (err) {
    throw new IoError('append', path, err);
  } finally {
    fs.closeSync(fd);
  }
}

/** Parse the journal, skipping a torn last line (a crash mid-append). */
export function readJournal(store: Store, key?: string): Array<JournalEvent & { at: string }> {
  // gc keeps older events in a rotated segment (journal-compact.ts): read it first, then the live file
  let text = '';
  for (const file of journalFiles(store)) {
    try {
      text += `${store.fs.readFileSync(file, 'utf8')}\n`;
    } catch {
      // not there
    }
  }
  const out: Array<JournalEvent & { at: string }> = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      const ev = JSON.parse(line);
      if (key === undefined || ev.key === key) out.push(ev);
    } catch {
      // torn line from a crash: ignore
    }
  }
  return out;
}
