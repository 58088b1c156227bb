// genjob push [REMOTE] [--key K]: publish the verification material of received and applied jobs under
// refs/genjob/keys/<key> on the remote (default: the branch's remote, else origin). Keys whose local ref
// already holds this receipt are not rebuilt; keys the remote already has are not sent; a key the
// remote holds with other material is left alone and reported (exit 4) after everything else landed.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { ConflictError } from '../core/errors.js';
import { buildMaterial } from '../git/build-material.js';
import { listPushable, type Material, readMaterial } from '../git/local-material.js';
import { materialSubject } from '../git/material-refs.js';
import { defaultRemote, localKeyRefs, pruneKeyRefs, pushKeys } from '../git/push-material.js';
import { resolveKey } from '../store/job-states.js';

export interface PushOptions extends CommonOptions {
  remote?: string;
  key?: string[];
}

export async function push(o: PushOptions): Promise<CommandResult> {
  const store = openStore(o);
  const root = store.root;
  const remote = o.remote ?? (await defaultRemote(root));
  const only = o.key?.map((k) => resolveKey(store, k));
  const pushable = listPushable(store, only);
  const local = await localKeyRefs(root);
  const stale = pushable.filter((p) => local.get(p.key)?.subject !== materialSubject(p.key, p.receiptSha256));
  const materials: Material[] = stale.map((p) => readMaterial(store, p));
  await buildMaterial(root, materials);
  if (only === undefined) await pruneKeyRefs(root, local, new Set(pushable.map((p) => p.key)));
  const outcome = await pushKeys(
    root,
    remote,
    pushable.map((p) => p.key),
    only === undefined,
  );
  const summary = `${outcome.created.length} key(s) pushed to ${remote}, ${outcome.present.length} already there`;
  if (outcome.conflicts.length > 0) {
    throw new ConflictError(
      'EGJ_PUSH_CONFLICT',
      `${remote}: refs/genjob/keys/${outcome.conflicts[0]!} holds other material for this key` +
        `${outcome.conflicts.length > 1 ? ` (and ${outcome.conflicts.length - 1} more key(s))` : ''}; ` +
        `it was left alone (${summary})`,
    );
  }
  return {
    human: pushable.length === 0 ? `nothing to push (no received or applied jobs with a receipt)` : summary,
    json: { ok: true, remote, built: materials.length, ...outcome },
  };
}
