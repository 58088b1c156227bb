// Claim one of the jobs a user named (`genjob work KEY…`), in the order given: the same
// rename(queue/<key>.json, running/<key>.json) as any claim, so a named job racing another worker
// still goes to exactly one of them. Undefined when none of them is in the queue any more.
import { claim } from './claim.js';
import type { Store } from './store.js';

export function claimChosen(store: Store, worker: string, keys: readonly string[]): string | undefined {
  for (const key of keys) if (claim(store, key, worker)) return key;
  return undefined;
}
