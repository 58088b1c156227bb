// dead/: rejected or late material, kept raw with the reason beside it, never deleted silently.
// Each item is `dead/<name>` (the raw bytes, byte for byte) plus `dead/<name>.why.json`
// ({reason, code, key, at}); the reason also goes to the journal.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { moveState, publishExclusive } from './durable.js';
import { journal } from './journal.js';
import type { Store } from './store.js';

export interface DeadReason {
  key?: string;
  code: string;
  reason: string;
  [field: string]: unknown;
}

function uniqueName(base: string): string {
  return `${base}.${Date.now()}-${randomBytes(3).toString('hex')}`;
}

function writeWhy(store: Store, name: string, why: DeadReason): void {
  const body = Buffer.from(`${JSON.stringify({ ...why, at: new Date().toISOString() }, null, 2)}\n`);
  publishExclusive(store, join(store.layout.dir('dead'), `${name}.why.json`), body);
  journal(store, { event: 'dead-lettered', ...why, file: `dead/${name}` });
}

/** Keep `bytes` (e.g. a late receipt) in dead/ under a fresh name. Returns the name. */
export function deadLetterBytes(store: Store, base: string, bytes: Uint8Array, why: DeadReason): string {
  const name = uniqueName(base);
  publishExclusive(store, join(store.layout.dir('dead'), name), bytes);
  writeWhy(store, name, why);
  return name;
}

/** Move a file (e.g. a malformed job from queue/) into dead/. Returns the name, or null when it was gone. */
export function deadLetterFile(store: Store, from: string, base: string, why: DeadReason): string | null {
  const name = uniqueName(base);
  try {
    moveState(store, from, join(store.layout.dir('dead'), name));
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  writeWhy(store, name, why);
  return name;
}
