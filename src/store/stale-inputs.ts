// Whether a job's inputs (or reads) changed since it was minted: each input's bytes (or absence) against the
// digest the job recorded. Display only (status marks such jobs); apply's own stale check is the
// one that decides. A file that cannot be read counts as changed.

import { join } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { hashSmallFileSync } from './hash-file.js';
import type { Store } from './store.js';

export function inputsChanged(
  store: Store,
  inputs: ReadonlyArray<{ path: string; sha256: string | null }>,
): boolean {
  for (const input of inputs) {
    let now: string | null;
    try {
      now = hashSmallFileSync(join(store.root, input.path)).sha256;
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') return true;
      now = null;
    }
    if (now !== input.sha256) return true;
  }
  return false;
}
