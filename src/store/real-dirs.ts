// A directory genjob lists and removes entries from must be a real directory, never a symbolic link:
// .gen/ can be committed, so a clone can hold `.gen/staging -> ../../elsewhere`, and readdir and rm
// follow such a link out of the repository. Checked with lstat (a missing directory is fine: there
// is nothing in it to remove) before anything is listed, so a refusal removes nothing.
import { errnoOf, UsageError } from '../core/errors.js';
import type { Store } from './store.js';

/** Refuse (EGJ_BAD_PATH) the first of `dirs` that exists and is not a real directory; `who` names the remover. */
export function assertRealDirs(store: Store, dirs: readonly string[], who: string): void {
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
      `${dir}: ${what}; ${who} removes only inside .gen/'s own directories, never through a link, so nothing was removed: make it a real directory (or delete it)`,
    );
  }
}
