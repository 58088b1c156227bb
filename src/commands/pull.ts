// genjob pull [REMOTE]: fetch the remote's refs/genjob/keys/* into refs/genjob-pulled/keys/* for the merge
// gate, and check each key's material as hostile input (src/git/read-material.ts). Pulled material serves
// verification only: nothing enters .gen/, so no pulled job is ever in the set that `apply --all`,
// `status` or `work` act on, and a job gc pruned here cannot come back. A ref that cannot be used is
// named on stderr and skipped (exit 0): only a gate that needs that key fails, saying why.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { KEY_REFS, PULLED_REFS } from '../git/material-refs.js';
import { defaultRemote } from '../git/push-material.js';
import { fetchKeyRefs, type PulledRef, readPulled } from '../git/read-material.js';
import { Store } from '../store/store.js';

export interface PullOptions extends CommonOptions {
  remote?: string;
}

export async function pull(o: PullOptions): Promise<CommandResult> {
  const root = findRoot(o.root);
  const remote = o.remote ?? (await defaultRemote(root));
  const refs = await fetchKeyRefs(root, remote);
  const refused: Array<{ ref: string; rule: string }> = [];
  const named: Array<PulledRef & { key: string }> = [];
  // named as the remote names them: that is where someone would look
  const theirs = (ref: string) => ref.replace(PULLED_REFS, KEY_REFS);
  for (const r of refs) {
    if (r.key === null)
      refused.push({ ref: theirs(r.ref), rule: 'the ref does not name one key (refs/genjob/keys/<64 hex>)' });
    else named.push(r as PulledRef & { key: string });
  }
  const keys: string[] = [];
  for (const outcome of await readPulled(root, named)) {
    if (outcome.ok) keys.push(outcome.material.key);
    else refused.push({ ref: theirs(outcome.ref), rule: outcome.rule });
  }
  // check records: refs/genjob/checks/<key>/<sha256>, each checked before it is stored
  const { pullCheckRecords } = await import('../check/check-refs.js');
  const { checkKeys } = await import('../check/check-trust.js');
  const checks = await pullCheckRecords(new Store(root), remote, checkKeys(root));
  refused.push(...checks.refused);
  const checkSummary =
    checks.imported + checks.present + checks.unsigned > 0
      ? `; ${checks.imported} check record(s) imported, ${checks.present} already here${checks.unsigned > 0 ? `, ${checks.unsigned} not signed by a key pinned for checks` : ''}`
      : '';
  const checkJson = { imported: checks.imported, present: checks.present, unsigned: checks.unsigned };
  const summary = `${keys.length} key(s) of verification material from ${remote}${refused.length > 0 ? `, ${refused.length} ref(s) skipped` : ''}${checkSummary}`;
  return {
    human: summary,
    json: { ok: true, remote, keys, refused, checks: checkJson },
    ...(refused.length > 0
      ? {
          stderr: refused
            .map(
              (f) =>
                `genjob: warning: ${remote} ${f.ref}: ${f.rule}; skipped (a gate that needs this key fails)\n`,
            )
            .join(''),
        }
      : {}),
  };
}
