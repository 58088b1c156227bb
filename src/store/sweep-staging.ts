// Remove the `.gen/staging/.extract-<pid>-<start>-*` directories of workers that died (or failed to
// clean up) mid-extract. A directory of a live process is left alone; one without pid in its name
// (an older genjob) only once it is older than `maxAgeMs`. `work` and `reap` run it before they start;
// `check` runs it for its scratch trees (`.check-<pid>-<start>-*`). A .gen/ or staging/ that is a link
// (a clone can commit one) is refused before anything is listed: the sweep removes nothing through it.
// Each directory goes by removeTree: never through a link, and a directory the checked code left
// without its owner's bits (`chmod 000 d`) is given them back first, so it does not stop every later check.
import { join } from 'node:path';
import { STAGING_PREFIX } from '../transport/staging-writer.js';
import { readdirOrEmpty } from './durable.js';
import { ownerGone, thisProcess } from './process-identity.js';
import { assertRealDirs } from './real-dirs.js';
import { removeTree } from './remove-tree.js';
import type { Store } from './store.js';

export function sweepDeadStaging(
  store: Store,
  maxAgeMs = 3_600_000,
  now = Date.now(),
  prefix = STAGING_PREFIX,
): string[] {
  const removed: string[] = [];
  const dir = store.layout.staging;
  assertRealDirs(store, [store.layout.gen, dir], "the sweep of dead workers' staging");
  for (const name of readdirOrEmpty(store, dir)) {
    if (!name.startsWith(prefix)) continue;
    const path = join(dir, name);
    const m = /^(\d+)-(\d+)-/.exec(name.slice(prefix.length));
    let gone: boolean;
    if (m) {
      const pid = Number(m[1]);
      gone = pid !== process.pid && ownerGone({ host: thisProcess().host, pid, start: Number(m[2]) });
    } else {
      try {
        gone = now - store.fs.lstatSync(path).mtimeMs > maxAgeMs;
      } catch {
        continue; // gone already
      }
    }
    if (!gone) continue;
    removeTree(path);
    removed.push(path);
  }
  return removed;
}
