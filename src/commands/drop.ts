// genjob drop KEY... | --run NAME: give up on queued, received or reverted jobs (say, one whose receipt is
// aborted or rejected, which would keep `verify --all` failing). Each job file, its receipt and its outputs
// move to dead/ with the reason — nothing is deleted. Running and applied jobs are refused (with --run,
// skipped), and so is a job whose apply was interrupted (store/interrupted-apply.ts). Many keys go on past
// a failure (each-key.ts).

import { withApplyLock } from '../apply/apply-lock.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { ConflictError } from '../core/errors.js';
import { deadLetterFile } from '../store/dead-letter.js';
import { exists } from '../store/durable.js';
import { refuseInterruptedApply } from '../store/interrupted-apply.js';
import { findJob } from '../store/job-states.js';
import { journal } from '../store/journal.js';
import { withKeyLock } from '../store/key-lock.js';
import type { Store } from '../store/store.js';
import { chooseKeys, type Done, eachKey, type KeysChoice } from './each-key.js';

async function dropOne(store: Store, key: string, reason: string): Promise<Done> {
  // the apply lock first (apply's own order), so no apply begins between the look and the move
  const moved = await withApplyLock(store, { timeoutMs: 30_000 }, () =>
    withKeyLock(store, key, () => {
      const found = findJob(store, key);
      if (!found || found.state === 'running' || found.state === 'applied') {
        throw new ConflictError(
          'EGJ_NOT_DROPPABLE',
          `${found?.file ?? key}: only queued, received or reverted jobs can be dropped (this one is ${found?.state ?? 'unknown'}${found?.state === 'applied' ? '; use genjob revert' : ''})`,
        );
      }
      refuseInterruptedApply(store, key, 'EGJ_NOT_DROPPABLE', 'drop');
      const why = { key, code: 'EGJ_DROPPED', reason };
      const names = [deadLetterFile(store, found.file, `${key}.job`, why)];
      if (exists(store, store.layout.receipt(key)))
        names.push(deadLetterFile(store, store.layout.receipt(key), `${key}.receipt`, why));
      if (exists(store, store.layout.outDir(key)))
        names.push(deadLetterFile(store, store.layout.outDir(key), `${key}.out`, why));
      return names.filter((n): n is string => n !== null);
    }),
  );
  journal(store, { event: 'dropped', key, reason });
  return {
    key,
    line: `${key.slice(0, 12)} dropped: ${moved.map((n) => `dead/${n}`).join(', ')}`,
    json: { ok: true, key, dead: moved },
  };
}

export async function drop(o: CommonOptions & KeysChoice & { reason?: string }): Promise<CommandResult> {
  const store = openStore(o);
  const chosen = chooseKeys(store, o, ['queue', 'received', 'reverted']);
  const reason = `dropped by the user${o.reason ? `: ${o.reason}` : ''}`;
  return eachKey(chosen, 'dropped', (key) => dropOne(store, key, reason), o.run);
}
