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

// The reason is published first: an item in dead/ is never without its reason (`retry` of a cancelled
// job, `show` and gc read it). A crash or a failed write between the two leaves at most a reason with
// no item, which nothing lists; a failed write removes it.
function publishWhy(store: Store, name: string, why: DeadReason): string {
  const file = join(store.layout.dir('dead'), `${name}.why.json`);
  const body = Buffer.from(`${JSON.stringify({ ...why, at: new Date().toISOString() }, null, 2)}\n`);
  publishExclusive(store, file, body);
  return file;
}

/** Best effort: remove the reason of an item that did not reach dead/. */
function discardWhy(store: Store, whyFile: string, item: string): void {
  try {
    store.fs.lstatSync(item);
  } catch {
    try {
      store.fs.unlinkSync(whyFile);
    } catch {
      // a reason with no item is never listed
    }
  }
}

function journalDead(store: Store, name: string, why: DeadReason): void {
  journal(store, { event: 'dead-lettered', ...why, file: `dead/${name}` });
}

/** Keep `bytes` (e.g. a late receipt) in dead/ under a fresh name. Returns the name. */
export function deadLetterBytes(store: Store, base: string, bytes: Uint8Array, why: DeadReason): string {
  const name = uniqueName(base);
  const item = join(store.layout.dir('dead'), name);
  const whyFile = publishWhy(store, name, why);
  try {
    publishExclusive(store, item, bytes);
  } catch (err) {
    discardWhy(store, whyFile, item);
    throw err;
  }
  journalDead(store, name, why);
  return name;
}

/** Move a file (e.g. a malformed job from queue/) into dead/. Returns the name, or null when it was gone. */
export function deadLetterFile(store: Store, from: string, base: string, why: DeadReason): string | null {
  const name = uniqueName(base);
  const item = join(store.layout.dir('dead'), name);
  const whyFile = publishWhy(store, name, why);
  try {
    moveState(store, from, item);
  } catch (err) {
    discardWhy(store, whyFile, item);
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  journalDead(store, name, why);
  return name;
}
