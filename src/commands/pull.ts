// genjob pull [REMOTE]: fetch the remote's refs/genjob/keys/* and import each key not yet here into
// .gen/ as a received job. Pulled material is hostile input (src/git/read-material.ts checks it);
// verify checks it again, signatures included. Every good key is imported; then a key refused as
// malformed makes the run exit 3 and a key held here with other bytes exit 4, both named.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { ConflictError, RejectedError } from '../core/errors.js';
import { importMaterial } from '../git/import-material.js';
import { PULLED_REFS } from '../git/material-refs.js';
import { defaultRemote, localKeyRefs } from '../git/push-material.js';
import { fetchKeyRefs, type PulledRef, readPulled } from '../git/read-material.js';
import { exists } from '../store/durable.js';

export interface PullOptions extends CommonOptions {
  remote?: string;
}

export async function pull(o: PullOptions): Promise<CommandResult> {
  const store = openStore(o);
  const remote = o.remote ?? (await defaultRemote(store.root));
  const refs = await fetchKeyRefs(store.root, remote);
  const refused: Array<{ ref: string; rule: string }> = [];
  const named: Array<PulledRef & { key: string }> = [];
  const local = await localKeyRefs(store.root);
  let unchanged = 0;
  for (const r of refs) {
    if (r.key === null)
      refused.push({ ref: r.ref, rule: 'the ref does not name one key (refs/genjob/keys/<64 hex>)' });
    // the same commit this clone built from its own receipt: nothing new to read
    else if (local.get(r.key)?.oid === r.oid && exists(store, store.layout.receipt(r.key))) unchanged += 1;
    else named.push(r as PulledRef & { key: string });
  }
  const imported: string[] = [];
  const present: string[] = [];
  const skipped: Array<{ key: string; why: string }> = [];
  const conflicts: Array<{ key: string; why: string }> = [];
  for (const outcome of await readPulled(store.root, named)) {
    if (!outcome.ok) {
      refused.push({ ref: `${PULLED_REFS}${outcome.key}`, rule: outcome.rule });
      continue;
    }
    const r = importMaterial(store, outcome.material, remote);
    const key = outcome.material.key;
    if (r.status === 'imported') imported.push(key);
    else if (r.status === 'present') present.push(key);
    else if (r.status === 'skipped') skipped.push({ key, why: r.why });
    else conflicts.push({ key, why: r.why });
  }
  // check records: refs/genjob/checks/<key>/<sha256>, each checked before it is stored
  const { pullCheckRecords } = await import('../check/check-refs.js');
  const { checkKeys } = await import('../check/check-trust.js');
  const checks = await pullCheckRecords(store, remote, checkKeys(store.root));
  refused.push(...checks.refused);
  const checkSummary =
    checks.imported + checks.present + checks.unsigned > 0
      ? `; ${checks.imported} check record(s) imported, ${checks.present} already here${checks.unsigned > 0 ? `, ${checks.unsigned} not signed by a key pinned for checks` : ''}`
      : '';
  const summary = `${imported.length} job(s) imported from ${remote}, ${present.length + unchanged} already here${checkSummary}`;
  const name = (ref: string) => ref.replace(PULLED_REFS, 'refs/genjob/keys/');
  const checkJson = { imported: checks.imported, present: checks.present, unsigned: checks.unsigned };
  if (conflicts.length > 0) {
    const c = conflicts[0]!;
    throw new ConflictError(
      'EGJ_PULL_CONFLICT',
      `${remote} refs/genjob/keys/${c.key}: ${c.why}; not overwritten${conflicts.length > 1 ? ` (and ${conflicts.length - 1} more key(s))` : ''} (${summary})`,
    );
  }
  if (refused.length > 0) {
    const f = refused[0]!;
    throw new RejectedError(
      'EGJ_PULL_REFUSED',
      `${remote} ${name(f.ref)}: ${f.rule}; not imported${refused.length > 1 ? ` (and ${refused.length - 1} more ref(s))` : ''} (${summary})`,
    );
  }
  const lines = [summary, ...skipped.map((s) => `${s.key.slice(0, 12)} not imported: ${s.why}`)];
  return {
    human: lines.join('\n'),
    json: { ok: true, remote, imported, present, skipped, checks: checkJson },
  };
}
