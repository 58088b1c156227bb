// The check shared by the commands that read a shadow plane (compare, promote): a --shadow NAME no
// `work --shadow` ever ran (a typo) is bad usage naming the planes there are, before anything is read.
import { UsageError } from '../core/errors.js';
import { checkShadowName, ShadowStore } from '../shadow/shadow-store.js';
import type { Store } from '../store/store.js';

/** NAME, when .gen/shadow/ holds that plane; else EGJ_USAGE listing the planes there are. */
export function existingPlane(store: Store, name: string, planes = ShadowStore.planes(store)): string {
  if (planes.includes(checkShadowName(name))) return name;
  throw new UsageError(
    'EGJ_USAGE',
    `--shadow ${name}: no such shadow plane in ${store.layout.gen}/shadow/ (${planes.length > 0 ? `there are: ${planes.join(', ')}` : 'there is none yet: run genjob work --shadow NAME first'})`,
  );
}
