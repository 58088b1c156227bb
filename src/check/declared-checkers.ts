// The names of the checkers a repository's genjob.config.json declares, in a module that loads no
// schema: where there is no config file none is declared, and the config's reader (with every schema
// under it) is loaded only when there is a file to read. show and the report ask this at each start.
import { join } from 'node:path';
import { CONFIG_FILE } from '../cli/config-name.js';
import { UsageError } from '../core/errors.js';
import type { Store } from '../store/store.js';

export async function declaredCheckers(store: Store): Promise<string[]> {
  if (store.fs.statSync(join(store.root, CONFIG_FILE), { throwIfNoEntry: false }) === undefined) return [];
  const { loadCheckers } = await import('./checker.js');
  return loadCheckers(store.root).map((c) => c.name);
}

/**
 * Bad usage, before any job is touched, when `flag` names a checker genjob.config.json does not declare:
 * no record of it can ever be made, so a gate on it would only send the user to `genjob check`, which
 * refuses the name.
 */
export async function refuseUndeclared(store: Store, flag: string, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  const declared = await declaredCheckers(store);
  const unknown = names.find((n) => !declared.includes(n));
  if (unknown !== undefined)
    throw new UsageError(
      'EGJ_CHECKER_UNKNOWN',
      `${flag} ${unknown}: ${CONFIG_FILE} declares no such checker (${declared.length > 0 ? `it declares ${declared.join(', ')}` : 'it declares none'})`,
    );
}
