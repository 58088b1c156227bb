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
function publishWhy(store: Store, file: string, why: DeadReason): void {
  const body = Buffer.from(`${JSON.stringify({ ...why, at: new Date().toISOString() }, null, 2)}\n`);
  publishExclusive(store, file, body);
}

/** Best effort: remove the reason of an item that did not reach dead/. */
function discardWhy(store: Store, whyFile: string, item: string): void {
  try {
    store.fs.lstatSync(item);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') return; // cannot tell: a reason too many beats an item without one
    try {
      store.fs.unlinkSync(whyFile);
    } catch {
      // a reason with no item is never listed
    }
  }
}

/** Keep `bytes` (e.g. a late receipt) in dead/ under a fresh name. Returns the name. */
export function deadLetterBytes(store: Store, base: string, bytes: Uint8Array, why: DeadReason): string {
  const name = uniqueName(base);
  withReason(store, name, why, (item) => publishExclusive(store, item, bytes));
  return name;
}

/** Move a file (e.g. a malformed job from queue/) into dead/. Returns the name, or null when it was gone. */
export function deadLetterFile(store: Store, from: string, base: string, why: DeadReason): string | null {
  const name = uniqueName(base);
  try {
    withReason(store, name, why, (item) => moveState(store, from, item));
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  return name;
}

/**
 * Publish the reason of `dead/<name>`, then put the item there with `put`, then journal it. When either
 * fails and the item did not reach dead/, its reason is removed (best effort): nothing is listed twice
 * when the command is run again.
 */
function withReason(store: Store, name: string, why: DeadReason, put: (item: string) => void): void {
  const item = join(store.layout.dir('dead'), name);
  const whyFile = `${item}.why.json`;
  try {
    publishWhy(store, whyFile, why);
    put(item);
  } catch (err) {
    discardWhy(store, whyFile, item);
    throw err;
  }
  journal(store, { event: 'dead-lettered', ...why, file: `dead/${name}` });
}
