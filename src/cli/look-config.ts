// The commands that only look at the queue (status, show, report) need genjob.config.json for one thing:
// the names of the declared checkers. A file that cannot be read (not JSON, an unknown key, a bad
// checker) must not keep the user from looking at the queue while fixing it: these commands go on as
// if no checker were declared, with a warning naming the file and the problem. work, check and gate,
// which act on the file, still refuse it (EGJ_CONFIG).
import { join } from 'node:path';
import { GenjobError } from '../core/errors.js';
import type { Store } from '../store/store.js';
import { CONFIG_FILE } from './config-name.js';

/** The warning line for stderr when the repository's config cannot be read ('' when it can, or there is none). */
export async function configForLooking(store: Store, command: string): Promise<string> {
  if (store.fs.statSync(join(store.root, CONFIG_FILE), { throwIfNoEntry: false }) === undefined) return '';
  const { loadCheckers } = await import('../check/checker.js');
  try {
    loadCheckers(store.root);
    return '';
  } catch (err) {
    if (!(err instanceof GenjobError) || err.code !== 'EGJ_CONFIG') throw err;
    (await import('./config-file.js')).ignoreRepoConfig(store.root);
    return `genjob: warning: ${err.message}; ${command} goes on without its checkers (work, check and gate refuse the file until it is fixed)\n`;
  }
}
