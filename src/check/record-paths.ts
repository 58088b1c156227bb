// Where check records lie (.gen/checks/<key>/<checker>/<sha256>.json) and how large one may be, in a
// module that loads no schema: push lists and sends records as bytes and never decodes one, so it
// need not load zod to do so.
import { join } from 'node:path';
import { readdirOrEmpty } from '../store/durable.js';
import type { Store } from '../store/store.js';

export const CHECKS_DIR = 'checks';
/** A record is small JSON; anything larger is refused unread. */
export const MAX_CHECK_RECORD_BYTES = 4 * 1024 * 1024;

export function checksDir(store: Store, key: string, checker?: string): string {
  const dir = join(store.layout.dir(CHECKS_DIR), key);
  return checker === undefined ? dir : join(dir, checker);
}

export function recordFile(store: Store, key: string, checker: string, digest: string): string {
  return join(checksDir(store, key, checker), `${digest}.json`);
}

/** The checker names that have a record directory for `key`. */
export function recordedCheckers(store: Store, key: string): string[] {
  return readdirOrEmpty(store, checksDir(store, key))
    .filter((n) => !n.startsWith('.'))
    .sort();
}
