// A directory genjob writes into, lists or removes entries from must be a real directory, never a
// symbolic link: .gen/ can be committed, so a clone can hold `.gen/objects -> /etc/cron.d` or
// `.gen/staging -> ../../elsewhere`, and open, readdir and rm follow such a link out of the repository.
// Checked with lstat before anything is written or removed, so a refusal leaves everything as it was.
import { errnoOf, UsageError } from '../core/errors.js';
import type { Store } from './store.js';

/**
 * Refuse (EGJ_BAD_PATH) the first of `dirs` that exists and is not a real directory (a missing one is
 * fine: the caller makes it, or has nothing in it to remove). `who` names the command, `act` what it does.
 */
export function assertRealDirs(
  store: Store,
  dirs: readonly string[],
  who: string,
  act: 'removes' | 'writes' = 'removes',
): void {
  for (const dir of dirs) {
    let st: ReturnType<Store['fs']['lstatSync']>;
    try {
      st = store.fs.lstatSync(dir);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') continue;
      throw err;
    }
    if (st.isDirectory()) continue;
    const what = st.isSymbolicLink() ? 'a symbolic link' : 'not a directory';
    throw new UsageError(
      'EGJ_BAD_PATH',
      `${dir}: ${what}; ${who} ${act} only inside .gen/'s own directories, never through a link, so nothing was ${act === 'removes' ? 'removed' : 'written'}: make it a real directory (or delete it)`,
    );
  }
}
