// genjob push [REMOTE] [--key K]: publish the verification material of received and applied jobs under
// refs/genjob/keys/<key> on the remote (default: the branch's remote, else origin). With nothing new it
// reads no receipt and sends nothing: every receipt's stat matches push's record of what it built
// (src/git/built-record.ts) and one `git ls-remote` shows each key's ref there at that commit. Otherwise
// keys whose local ref already holds this receipt are not rebuilt; keys the remote already has are not
// sent; a key the remote holds with other material is left alone and reported (exit 4) after everything
// else landed.
import type { Stats } from 'node:fs';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { ConflictError, GitFailedError } from '../core/errors.js';
import { buildMaterial } from '../git/build-material.js';
import {
  type BuiltRecord,
  builtIfUnchanged,
  loadBuilt,
  receiptStat,
  saveBuilt,
} from '../git/built-record.js';
import {
  listPushableKeys,
  type Material,
  type PushableKey,
  readMaterial,
  readPushable,
} from '../git/local-material.js';
import { KEY_REFS, keyRef, materialSubject } from '../git/material-refs.js';
import {
  checkRemote,
  defaultRemote,
  localKeyRefs,
  lsRemote,
  type PushOutcome,
  pruneKeyRefs,
  pushKeys,
} from '../git/push-material.js';
import { resolveKey } from '../store/job-states.js';
import type { Store } from '../store/store.js';

export interface PushOptions extends CommonOptions {
  remote?: string;
  key?: string[];
}

type Stated = PushableKey & { st: Stats };

/** True when every key's receipt is the one last built and the remote (`there`) holds each key at that commit. */
async function nothingNew(
  keys: readonly Stated[],
  record: BuiltRecord,
  there: Promise<Map<string, string>>,
): Promise<boolean> {
  const built = keys.map((k) => builtIfUnchanged(record, k.key, k.st));
  if (built.some((b) => b === undefined)) return false;
  const refs = await there;
  return keys.every((k, i) => refs.get(keyRef(k.key)) === built[i]!.oid);
}

/** Build what is not built yet, record it, and push every key (git sends only what the remote lacks). */
async function buildAndPush(
  store: Store,
  remote: string,
  keys: readonly Stated[],
  record: BuiltRecord,
  all: boolean,
): Promise<{ built: number; outcome: PushOutcome }> {
  const root = store.root;
  const pushable = keys.flatMap((k) => {
    const p = readPushable(store, k);
    return p === undefined ? [] : [{ ...p, st: k.st }];
  });
  const local = await localKeyRefs(root);
  const holds = (refs: typeof local, key: string, receiptSha256: string) =>
    refs.get(key)?.subject === materialSubject(key, receiptSha256);
  const materials: Material[] = pushable
    .filter((p) => !holds(local, p.key, p.receiptSha256))
    .map((p) => readMaterial(store, p));
  await buildMaterial(root, materials);
  const now = materials.length > 0 ? await localKeyRefs(root) : local;
  saveBuilt(
    store,
    all ? new Map() : record.entries,
    pushable.flatMap((p) =>
      holds(now, p.key, p.receiptSha256)
        ? [{ key: p.key, oid: now.get(p.key)!.oid, receiptSha256: p.receiptSha256, st: p.st }]
        : [],
    ),
  );
  if (all) await pruneKeyRefs(root, now, new Set(pushable.map((p) => p.key)));
  const outcome = await pushKeys(
    root,
    remote,
    pushable.map((p) => p.key),
    all,
  );
  return { built: materials.length, outcome };
}

export async function push(o: PushOptions): Promise<CommandResult> {
  let remote: string | undefined;
  try {
    return await pushTo(o, (name) => {
      remote = name;
    });
  } catch (err) {
    // git's words name the remote only sometimes: the message says which one was pushed to
    throw err instanceof GitFailedError && remote !== undefined ? err.within(`push to ${remote}`) : err;
  }
}

async function pushTo(o: PushOptions, pushingTo: (remote: string) => void): Promise<CommandResult> {
  const store = openStore(o);
  const root = store.root;
  const only = o.key?.map((k) => resolveKey(store, k));
  const all = only === undefined;
  // the remote's key refs are asked for first: git answers while this process stats the receipts (a
  // remote given by name is asked at once; a `.then` would wait until the stats below are done)
  const wanted = all ? [`${KEY_REFS}*`] : only.map(keyRef);
  const remoteName =
    o.remote === undefined ? defaultRemote(root).then(checkRemote) : Promise.resolve(checkRemote(o.remote));
  const there =
    o.remote === undefined
      ? remoteName.then((r) => lsRemote(root, r, wanted))
      : lsRemote(root, o.remote, wanted);
  there.catch(() => {}); // unused when something is new; git push then reports an unreachable remote
  // each receipt's stat is taken before it may be read (built-record.ts)
  const receipts = store.layout.dir('receipts');
  const keys = listPushableKeys(store, only).flatMap((k) => {
    const st = receiptStat(store, receipts, k.key);
    return st === undefined ? [] : [{ ...k, st }];
  });
  const record = loadBuilt(store);
  const remote = await remoteName;
  pushingTo(remote);
  // no keys: nothing to send, and no git push (it would only prune and push stale local refs)
  const { built, outcome } =
    keys.length === 0 || (await nothingNew(keys, record, there))
      ? { built: 0, outcome: { created: [], present: keys.map((k) => k.key), conflicts: [] } }
      : await buildAndPush(store, remote, keys, record, all);
  // check records of these keys ride along: refs/genjob/checks/<key>/<sha256>
  const checks = await (await import('../check/check-refs.js')).pushCheckRecords(
    store,
    remote,
    keys.map((k) => k.key),
  );
  const checkSummary =
    checks.created + checks.present > 0
      ? `; ${checks.created} check record(s) pushed, ${checks.present} already there`
      : '';
  const summary = `${outcome.created.length} key(s) pushed to ${remote}, ${outcome.present.length} already there${checkSummary}`;
  if (outcome.conflicts.length > 0) {
    throw new ConflictError(
      'EGJ_PUSH_CONFLICT',
      `${remote}: refs/genjob/keys/${outcome.conflicts[0]!} holds other material for this key` +
        `${outcome.conflicts.length > 1 ? ` (and ${outcome.conflicts.length - 1} more key(s))` : ''}; ` +
        `it was left alone (${summary})`,
    );
  }
  return {
    human: keys.length === 0 ? `nothing to push (no received or applied jobs with a receipt)` : summary,
    json: { ok: true, remote, built, ...outcome, checks },
  };
}
