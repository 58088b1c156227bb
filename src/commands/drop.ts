// genjob drop KEY... | --run NAME: give up on queued, received or reverted jobs (say, one whose receipt is
// aborted or rejected, which would keep `verify --all` failing). Each job's receipt and outputs, then its job
// file, move to dead/ with the reason — nothing is deleted (store/give-up.ts: in that order a crash leaves
// the job in its state and drop again finishes it). Running and applied jobs are refused (with --run,
// skipped), and so is a job whose apply was interrupted (store/interrupted-apply.ts). Many keys go on past
// a failure (each-key.ts).

import { withApplyLock } from '../apply/apply-lock.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { ConflictError } from '../core/errors.js';
import { deadLetterJob, finishGivenUp, givenUpUnfinished, setAsideResult } from '../store/give-up.js';
import { refuseInterruptedApply } from '../store/interrupted-apply.js';
import { findJob } from '../store/job-states.js';
import { journal } from '../store/journal.js';
import { withKeyLock } from '../store/key-lock.js';
import type { Store } from '../store/store.js';
import { chooseKeys, type Done, eachKey, type KeysChoice } from './each-key.js';

const DROPPED = 'EGJ_DROPPED';

async function dropOne(store: Store, key: string, reason: string): Promise<Done> {
  // the apply lock first (apply's own order), so no apply begins between the look and the move
  const { moved, finished } = await withApplyLock(store, { timeoutMs: 30_000 }, () =>
    withKeyLock(store, key, () => {
      const found = findJob(store, key);
      // a drop killed after the job file moved (before its journal line, or by a genjob that moved the job
      // file first): finish it
      const finished = found ? undefined : finishGivenUp(store, key, DROPPED, 'dropped');
      if (finished) return { moved: finished.moved, finished: finished.why.reason };
      if (!found || found.state === 'running' || found.state === 'applied') {
        throw new ConflictError(
          'EGJ_NOT_DROPPABLE',
          `${found?.file ?? key}: only queued, received or reverted jobs can be dropped (this one is ${found?.state ?? 'unknown'}${found?.state === 'applied' ? '; use genjob revert' : ''})`,
        );
      }
      refuseInterruptedApply(store, key, 'EGJ_NOT_DROPPABLE', 'drop');
      const why = { key, code: DROPPED, reason };
      // the receipt and outputs first: never left in place once the job is gone
      const result = setAsideResult(store, key, why);
      return { moved: [...deadLetterJob(store, key, found, why), ...result], finished: undefined };
    }),
  );
  // a finished drop's line was never written: it is journalled with the reason the job went with
  journal(store, { event: 'dropped', key, reason: finished ?? reason });
  const note =
    finished === undefined ? '' : ' (an interrupted drop finished: the job file was in dead/ already)';
  return {
    key,
    line: `${key.slice(0, 12)} dropped${note}: ${moved.map((n) => `dead/${n}`).join(', ')}`,
    json: { ok: true, key, dead: moved, ...(finished === undefined ? {} : { finished: true }) },
  };
}

export async function drop(o: CommonOptions & KeysChoice & { reason?: string }): Promise<CommandResult> {
  const store = openStore(o);
  // a dead key only when a drop killed after its last move left it to finish
  const chosen = chooseKeys(store, o, ['queue', 'received', 'reverted'], {
    dead: (key) => givenUpUnfinished(store, key, DROPPED, 'dropped') !== undefined,
  });
  const reason = `dropped by the user${o.reason ? `: ${o.reason}` : ''}`;
  return eachKey(chosen, 'dropped', (key) => dropOne(store, key, reason), o.run);
}
