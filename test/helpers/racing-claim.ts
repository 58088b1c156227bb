// A second worker that claims a job the moment it is claimable again: for tests of whoever gives a job
// back (a reap, a release). The job's move out of running/ is watched through a hooked store; any removal
// of the lease after that move is preceded by the other worker's claim and attempt (its lease renamed in),
// as when both processes wake from the same journal commit's fsync. A code path that never touches the
// lease after the move never triggers it: call `claimNow()` afterwards to make the claim all the same.
import { beginAttempt } from '../../src/store/attempts.js';
import { claim } from '../../src/store/claim.js';
import type { Store } from '../../src/store/store.js';
import { hookedStore } from './hooked-fs.js';

export function racingClaim(store: Store, key: string): { racing: Store; claimNow: () => void } {
  const from = store.layout.jobFile('running', key);
  const lease = store.layout.lease(key);
  let moved = false;
  let claimed = false;
  const claimNow = () => {
    if (claimed) return;
    claimed = true;
    claim(store, key, 'w2');
    beginAttempt(store, key, { id: 'w2', host: 'elsewhere', pid: 2 }, 30, 'local');
  };
  const racing = hookedStore(store, (call, args, proceed) => {
    if ((call === 'rmSync' || call === 'unlinkSync') && args[0] === lease && moved) claimNow();
    const result = proceed();
    if (call === 'renameSync' && args[0] === from) moved = true;
    return result;
  });
  return { racing, claimNow };
}
