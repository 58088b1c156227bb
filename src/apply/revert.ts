// Revert an applied key: put back the bytes the apply replaced (kept in objects/<before>) and delete the
// files it created, then the directories it made for them (each only while empty). All or nothing up front: every target must still hold the apply's `after` (or already
// its `before`, from a revert a crash interrupted), and every backup must be present, before anything is
// written; each file is then re-checked right before its commit, so a user's later edit is never lost.
// Last, the apply record is renamed applied/<key>.json → reverted/<key>.json: one rename, so a crash leaves
// the job applied (run revert again to finish) or reverted, never neither. `apply` of it writes it again.
import { GenjobError, UsageError, withNote } from '../core/errors.js';
import { moveState } from '../store/durable.js';
import { journal } from '../store/journal.js';
import type { Store } from '../store/store.js';
import { prunedOn, readTombstone, tombstoneFile } from '../store/tombstone.js';
import { withApplyLock } from './apply-lock.js';
import { staleError, type Write } from './apply-plan.js';
import { type AppliedRecord, readApplied, readReverted } from './apply-records.js';
import {
  commitTreeFiles,
  currentFile,
  readObject,
  removeEmptyDirs,
  removeTreeFile,
  sweepTornTemps,
} from './tree-file.js';

export async function revertApplied(
  store: Store,
  key: string,
  opts: { lockTimeoutMs?: number } = {},
): Promise<{ reverted: Write[]; already: boolean; record: AppliedRecord }> {
  store.ensure();
  return withApplyLock(store, { timeoutMs: opts.lockTimeoutMs }, (lock) => {
    const tomb = readTombstone(store, key);
    if (tomb?.state === 'applied') {
      throw new UsageError(
        'EGJ_PRUNED',
        `${tombstoneFile(store, key)}: key ${key.slice(0, 12)} was applied and its material pruned by genjob gc on ${prunedOn(tomb)} (its backups in objects/ are gone); it cannot be reverted — change the files back by hand or with git`,
      );
    }
    const record = readApplied(store, key);
    const revertedFile = store.layout.jobFile('reverted', key);
    const done = record === undefined ? readReverted(store, key) : undefined;
    if (done !== undefined) return { reverted: [], already: true, record: done };
    if (record === undefined) {
      throw new UsageError(
        'EGJ_NOT_APPLIED',
        `${store.layout.jobFile('applied', key)}: key ${key.slice(0, 12)} has no apply record; nothing to revert`,
      );
    }
    sweepTornTemps(
      store,
      record.writes.map((w) => w.path),
    );
    const changed = 'it changed after the apply and reverting would overwrite that edit';
    const todo: Write[] = [];
    const modes = new Map<string, number>();
    for (const w of record.writes) {
      const now = currentFile(store, w.path);
      if (now.sha256 === w.before) continue;
      if (now.sha256 !== w.after)
        throw staleError(w.path, w.after, now.sha256, `${changed}; nothing was written`);
      todo.push(w);
      // the mode the apply replaced, never with a bit the file does not have now (a record's modes are its word)
      modes.set(w.path, (w.before_mode ?? w.mode) & now.mode!);
    }
    // the bytes put back first, all or nothing up to the first commit (a full disk fails before it), then
    // the files the apply created are removed (an unlink needs no room)
    const restores = todo.filter((w) => w.before !== null);
    const removes = todo.filter((w) => w.before === null);
    const finishes = `\`genjob revert ${key.slice(0, 12)}\` finishes it`;
    const partial = (stale: boolean) =>
      stale
        ? `${changed}; stopped (files already reverted stay reverted)`
        : `the revert is partial (files already reverted stay reverted): ${finishes}`;
    const untouched = (stale: boolean) => (stale ? `${changed}; nothing was written` : 'nothing was written');
    commitTreeFiles(
      store,
      restores.map((w) => ({
        path: w.path,
        expected: w.after,
        mode: modes.get(w.path)!,
        bytes: () => readObject(store, w.before!),
      })),
      { untouched, partial },
      // Stryker disable next-line StringLiteral: the lock callback runs synchronously, so a compromise (set by proper-lockfile's timer) is never seen here and the step text never shows
      (path) => lock.assertHeld(`reverting ${path}`),
    );
    let written = restores.length;
    for (const w of removes) {
      const words = written > 0 ? partial : untouched;
      try {
        // Stryker disable next-line StringLiteral: the lock callback runs synchronously, so a compromise (set by proper-lockfile's timer) is never seen here and the step text never shows
        lock.assertHeld(`reverting ${w.path}`);
        removeTreeFile(store, w.path, w.after, words(true));
      } catch (err) {
        throw err instanceof GenjobError && err.code === 'EGJ_STALE' ? err : withNote(err, words(false));
      }
      written += 1;
    }
    // then the directories the apply made, each while it is empty (a file put in one since keeps it)
    try {
      removeEmptyDirs(store, record.created_dirs ?? []);
    } catch (err) {
      throw withNote(
        err,
        `the files are reverted, the directories the apply made not all removed: ${finishes}`,
      );
    }
    // Stryker disable next-line StringLiteral: the lock callback runs synchronously, so a compromise (set by proper-lockfile's timer) is never seen here and the step text never shows
    lock.assertHeld(`moving ${store.layout.jobFile('applied', key)} to reverted/`);
    store.fs.mkdirSync(store.layout.dir('reverted'), { recursive: true }); // a .gen/ made before reverted/ existed
    moveState(store, store.layout.jobFile('applied', key), revertedFile);
    journal(store, { event: 'reverted', key, writes: todo.length });
    return { reverted: todo, already: false, record };
  });
}
