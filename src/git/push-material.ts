// Push key refs to a remote: one `git push --porcelain` (per 2,000 refs) of explicit, non-forced refspecs
// refs/genjob/keys/<key>:refs/genjob/keys/<key>. A ref the remote already has at the same commit costs
// nothing; a ref the remote holds at another commit is refused by git (never forced) and reported as a
// conflict. A refusal that was a race with a pusher of the same material is told apart by reading the
// remote's value afterwards: the same commit landed, so nothing is lost.

import { GitFailedError, UsageError } from '../core/errors.js';
import { KEY_REFS, keyOfRef, keyRef } from './material-refs.js';
import { git } from './run-git.js';

const CHUNK = 2000;

export interface PushOutcome {
  /** Keys whose ref this push created on the remote. */
  created: string[];
  /** Keys the remote already held with the same material. */
  present: string[];
  /** Keys the remote holds with other material (left alone). */
  conflicts: string[];
}

/** Local key refs: key → commit id and subject. */
export async function localKeyRefs(root: string): Promise<Map<string, { oid: string; subject: string }>> {
  const r = await git(root, [
    'for-each-ref',
    '--format=%(objectname) %(refname) %(contents:subject)',
    KEY_REFS,
  ]);
  const refs = new Map<string, { oid: string; subject: string }>();
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const m = /^([0-9a-f]+) (\S+) (.*)$/.exec(line);
    const key = m ? keyOfRef(m[2]!, KEY_REFS) : null;
    if (m && key) refs.set(key, { oid: m[1]!, subject: m[3]! });
  }
  return refs;
}

/**
 * Push `keys`. With `all`, the local key refs are exactly `keys` (see pruneKeyRefs) and one pattern
 * refspec pushes them: git matches n explicit refspecs against n refs in O(n²), seconds for 1,000 keys.
 */
export async function pushKeys(
  root: string,
  remote: string,
  keys: readonly string[],
  all: boolean,
): Promise<PushOutcome> {
  const outcome: PushOutcome = { created: [], present: [], conflicts: [] };
  const refused: string[] = [];
  for (let i = 0; i < keys.length; i += all ? keys.length : CHUNK) {
    const chunk = all ? keys : keys.slice(i, i + CHUNK);
    const specs = all ? [`${KEY_REFS}*:${KEY_REFS}*`] : chunk.map((k) => `${keyRef(k)}:${keyRef(k)}`);
    const r = await git(root, ['push', '--porcelain', '--no-verify', remote, ...specs], { okCodes: [1] });
    const seen = new Set<string>();
    for (const line of r.stdout.toString('utf8').split('\n')) {
      const m = /^([ +\-*=!])\t[^\t:]+:([^\t]+)\t/.exec(line);
      const key = m ? keyOfRef(m[2]!, KEY_REFS) : null;
      if (!m || !key) continue;
      seen.add(key);
      if (m[1] === '=') outcome.present.push(key);
      else if (m[1] === '*') outcome.created.push(key);
      else refused.push(key);
    }
    if (r.code !== 0 && refused.length === 0) throw new GitFailedError(['push', remote], r.code, r.stderr);
    if (seen.size !== chunk.length)
      throw new GitFailedError(
        ['push', remote],
        r.code,
        `git reported ${seen.size} of ${chunk.length} refs. ${r.stderr}`,
      );
  }
  if (refused.length > 0) {
    const local = await localKeyRefs(root);
    const remoteRefs = await lsRemote(root, remote, refused.map(keyRef));
    const failed: string[] = [];
    for (const key of refused) {
      const there = remoteRefs.get(keyRef(key));
      if (there === undefined) failed.push(key);
      else if (there === local.get(key)?.oid) outcome.present.push(key);
      else outcome.conflicts.push(key);
    }
    if (failed.length > 0)
      throw new GitFailedError(
        ['push', remote],
        1,
        `the remote refused ${failed.length} ref(s), e.g. ${keyRef(failed[0]!)}`,
      );
  }
  return outcome;
}

/** Delete local key refs of keys not in `keep` (jobs dropped since they were built): push sends only what .gen/ holds. */
export async function pruneKeyRefs(
  root: string,
  local: ReadonlyMap<string, unknown>,
  keep: ReadonlySet<string>,
): Promise<void> {
  const gone = [...local.keys()].filter((k) => !keep.has(k));
  if (gone.length > 0)
    await git(root, ['update-ref', '--stdin'], { input: gone.map((k) => `delete ${keyRef(k)}\n`).join('') });
}

/** ref → object id on the remote, for the named refs. */
export async function lsRemote(
  root: string,
  remote: string,
  refs: readonly string[],
): Promise<Map<string, string>> {
  const r = await git(root, ['ls-remote', '--refs', remote, ...refs]);
  const out = new Map<string, string>();
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const [oid, ref] = line.split('\t');
    if (oid && ref) out.set(ref, oid);
  }
  return out;
}

/**
 * A remote as git is given it: a name or URL, never an option. git reads an argument starting with "-" as
 * one wherever it stands, and `--upload-pack=CMD` runs CMD on this machine.
 */
export function checkRemote(remote: string): string {
  if (remote.startsWith('-') || remote.trim() === '')
    throw new UsageError(
      'EGJ_USAGE',
      `remote ${JSON.stringify(remote)}: give a remote's name or URL (one starting with "-" would be an option to git)`,
    );
  return remote;
}

/** The remote a command talks to by default: the current branch's remote, else origin. */
export async function defaultRemote(root: string): Promise<string> {
  const head = await git(root, ['symbolic-ref', '-q', '--short', 'HEAD'], { okCodes: [1, 128] });
  const branch = head.stdout.toString('utf8').trim();
  if (head.code === 0 && branch) {
    const r = await git(root, ['config', '--get', `branch.${branch}.remote`], { okCodes: [1] });
    const name = r.stdout.toString('utf8').trim();
    if (r.code === 0 && name) return name;
  }
  return 'origin';
}
