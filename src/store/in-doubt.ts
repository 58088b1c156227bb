// Where a job is in doubt: `attempts/<key>/in-doubt.json` names the destination that had its bundle
// when the answer was lost (the host died, the session broke, a timeout). That host's result cache
// may hold the answer, so the job is first asked for again there; another host replays it only once
// the record is older than --in-doubt-after. An attempt delivered elsewhere replaces the record.
import { join } from 'node:path';
import { attemptsDirToWrite } from './attempts.js';
import { readIfExists, replaceFile } from './durable.js';
import type { Store } from './store.js';

export interface InDoubt {
  epoch: number;
  destination: string;
  since: string;
}

function fileOf(store: Store, key: string): string {
  return join(store.layout.attemptsDir(key), 'in-doubt.json');
}

export function recordInDoubt(store: Store, key: string, epoch: number, destination: string): void {
  const record: InDoubt = { epoch, destination, since: new Date().toISOString() };
  attemptsDirToWrite(store, key);
  replaceFile(store, fileOf(store, key), Buffer.from(`${JSON.stringify(record)}\n`));
}

/** The key's in-doubt record, or undefined (none, or unreadable: then any host may take it). */
export function readInDoubt(store: Store, key: string): InDoubt | undefined {
  const bytes = readIfExists(store, fileOf(store, key));
  if (bytes === undefined) return undefined;
  try {
    const r = JSON.parse(bytes.toString('utf8')) as InDoubt;
    return typeof r.destination === 'string' && Number.isFinite(Date.parse(r.since)) ? r : undefined;
  } catch {
    return undefined;
  }
}
