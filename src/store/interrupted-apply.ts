// A job whose apply was interrupted (applying/<key>.json stands) belongs to that apply until `genjob apply`
// finishes it: the next apply writes the rest of the tree and publishes applied/ whatever became of the job
// meanwhile, so a drop, retry or remint in between left a dropped job applied without its receipt, or a
// retried job queued and applied at once. drop, retry and remint refuse such a job; they look under the
// apply lock, so no apply can publish applying/ between their look and their move.
import { ConflictError } from '../core/errors.js';
import { exists } from './durable.js';
import type { Store } from './store.js';

/** Refuse (exit 4, `code`) to `verb` a job an interrupted apply still holds. */
export function refuseInterruptedApply(store: Store, key: string, code: `EGJ_${string}`, verb: string): void {
  const file = store.layout.applying(key);
  if (!exists(store, file)) return;
  throw new ConflictError(
    code,
    `${file}: an apply of this job was interrupted; run genjob apply to finish it first (genjob revert then undoes it), not ${verb}`,
  );
}
