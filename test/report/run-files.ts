// Runs for the report's tests, made by the run plane's own code over a fixture store: the manifest sealed
// by `sealManifest` (what `genjob mint --each … --run` calls), a remint's supersession by `supersede`, and
// gate records closed by `genjob gate`'s command function (the checks plane's reader, the real evidence
// and digests, a DSSE envelope with --sign-key).
import { type GateOptions, gate } from '../../src/commands/gate.js';
import { requireUserSecret } from '../../src/remote/cache-mac.js';
import { buildManifest, sealManifest } from '../../src/run/run-manifest.js';
import { parseRunName, runId } from '../../src/run/run-name.js';
import { findJob } from '../../src/store/job-states.js';
import type { Store } from '../../src/store/store.js';
import { supersede } from '../../src/store/supersede.js';

/**
 * Seal run `typed` (`NAME` or `NAME@N`) over `keys`, one per fixture path, under `secret` (this process's
 * user's by default; a CLI run with its own XDG_CACHE_HOME needs that cache's).
 */
export async function sealRun(
  store: Store,
  typed: string,
  keys: readonly string[],
  secret?: Buffer,
): Promise<void> {
  const { name, revision = 1 } = parseRunName(typed);
  const template = { instruction: 'Change {path}', also: [], reads: [], each: { glob: 'src/*.txt' } };
  const expansion = keys.map((key, i) => ({ path: `src/m${i}.txt`, key }));
  const manifest = buildManifest({ name, revision, id: runId(name, revision) }, template, expansion);
  sealManifest(store, manifest, secret ?? (await requireUserSecret()));
}

/** `key` reminted as `successor`, as `genjob remint` leaves it (the old job in dead/, linked). */
export async function remint(store: Store, key: string, successor: string): Promise<void> {
  supersede(store, key, successor, findJob(store, key)!, await requireUserSecret());
}

/** `genjob gate --run RUN --require-check tests --min-pass 95%` (and `extra`), which must close. */
export async function closeGate(root: string, run: string, extra: Partial<GateOptions> = {}) {
  const r = await gate({ root, run, requireCheck: ['tests'], minPass: '95%', ...extra });
  const json = r.json as { state: string; record?: { file: string; sha256: string; seq: number } };
  if (json.state !== 'closed' || !json.record) throw new Error(`gate ${run} did not close: ${r.human}`);
  return json.record;
}
