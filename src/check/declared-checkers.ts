// The names of the checkers a repository's genjob.config.json declares, in a module that loads no
// schema: where there is no config file none is declared, and the config's reader (with every schema
// under it) is loaded only when there is a file to read. show and the report ask this at each start.
import { join } from 'node:path';
import { CONFIG_FILE } from '../cli/config-name.js';
import type { Store } from '../store/store.js';

export async function declaredCheckers(store: Store): Promise<string[]> {
  if (store.fs.statSync(join(store.root, CONFIG_FILE), { throwIfNoEntry: false }) === undefined) return [];
  const { loadCheckers } = await import('./checker.js');
  return loadCheckers(store.root).map((c) => c.name);
}
