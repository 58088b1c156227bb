// genjob hook install [--pre-merge-commit] [--force]: write the gate's hook into the clone's hooks
// directory (core.hooksPath respected). A hook whose bytes are exactly what genjob wrote (its last line
// sums the rest) is rewritten; any other — a team's own, or genjob's with checks merged in by hand — is
// refused (exit 4) unless --force, so no one's hook is lost silently.
// git runs no pre-merge-commit hook on a fast-forward (it makes no merge commit), so installing that hook
// also sets merge.ff=false in the repository's own config: every `git merge` then makes a merge commit,
// which the hook checks. The line saying so names the value it replaced, and install records that value
// in the same config (genjob.mergeFfBeforeHook) for uninstall.
// genjob hook uninstall [--pre-merge-commit] [--force]: remove the hook under the same rule (only genjob's
// own bytes, unless --force), and put back the merge.ff install replaced, only while merge.ff is still
// the false install set: a value set since is the user's.
import { mkdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { ConflictError, errnoOf, IoError } from '../core/errors.js';
import { readText } from '../core/read-text.js';
import { type HookName, hookScript, isGenjobHook } from '../git/hook-script.js';
import { git, gitText } from '../git/run-git.js';
import { replaceFile } from '../store/durable.js';
import { nodeFs } from '../store/fs-port.js';

export interface HookOptions extends CommonOptions {
  preMergeCommit?: boolean;
  force?: boolean;
}

/**
 * Where install records the merge.ff it replaced, in the repository's own config: JSON, the value as
 * git gave it or null for none. Set only when install changed merge.ff (it was not false already).
 */
const MERGE_FF_RECORD = 'genjob.mergeFfBeforeHook';

/** The hooks directory (core.hooksPath respected), the hook's file in it, and the bytes there now. */
async function hookAt(root: string, name: HookName) {
  const hooks = await gitText(root, ['rev-parse', '--path-format=absolute', '--git-path', 'hooks'], {
    userHooksPath: true,
  });
  const file = join(hooks, name);
  let existing: string | undefined;
  try {
    existing = readText(file);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw new IoError('read', file, err);
  }
  return { hooks, file, existing, ours: existing !== undefined && isGenjobHook(existing) };
}

export async function hookInstall(o: HookOptions): Promise<CommandResult> {
  const root = findRoot(o.root);
  const name: HookName = o.preMergeCommit ? 'pre-merge-commit' : 'pre-push';
  const { hooks, file, existing, ours } = await hookAt(root, name);
  if (existing !== undefined && !ours && !o.force)
    throw new ConflictError(
      'EGJ_HOOK_EXISTS',
      `${file}: a ${name} hook genjob did not write (or one edited since) is there; merge the gate into it by hand or pass --force to replace it`,
    );
  const script = hookScript(name, process.execPath, process.argv[1]!);
  // the same hook already there: nothing to write, and nothing said to have changed (merge.ff is still
  // set below: it may have been unset since)
  const replaced =
    existing === script ? 'unchanged' : existing === undefined ? 'installed' : ours ? 'rewrote' : 'replaced';
  if (replaced !== 'unchanged') {
    mkdirSync(hooks, { recursive: true });
    replaceFile({ fs: nodeFs }, file, Buffer.from(script), 0o755);
  }
  const done = { ok: true, hook: name, file, action: replaced };
  if (name !== 'pre-merge-commit') return { human: `${replaced} ${file}`, json: done };
  const was = await noFastForward(root);
  const before = was === null ? 'it set none' : `it was ${was}`;
  return {
    human: `${replaced} ${file}\nset merge.ff=false in this repository's config (${before}): git runs no pre-merge-commit hook on a fast-forward, so every merge now makes a merge commit for the hook to check (git merge --ff or --ff-only skips it, as --no-verify does)`,
    json: { ...done, merge_ff: { set: 'false', was } },
  };
}

/**
 * Set merge.ff=false in the repository's own config; the value it held before (null: none). A value
 * install replaces is recorded first (MERGE_FF_RECORD); false found there leaves the record as it is (an
 * earlier install's, or none: then the user's own false, for uninstall to keep).
 */
async function noFastForward(root: string): Promise<string | null> {
  const was = await localConfig(root, 'merge.ff');
  if (was !== 'false') {
    await git(root, ['config', '--local', MERGE_FF_RECORD, JSON.stringify(was)]);
    await git(root, ['config', '--local', 'merge.ff', 'false']);
  }
  return was;
}

/** The repository's own value of `name` (null: none). */
async function localConfig(root: string, name: string): Promise<string | null> {
  const r = await git(root, ['config', '--local', '--get', name], { okCodes: [1] });
  return r.code === 0 ? r.stdout.toString('utf8').replace(/\n$/, '') : null;
}

export async function hookUninstall(o: HookOptions): Promise<CommandResult> {
  const root = findRoot(o.root);
  const name: HookName = o.preMergeCommit ? 'pre-merge-commit' : 'pre-push';
  const { file, existing, ours } = await hookAt(root, name);
  if (existing !== undefined && !ours && !o.force)
    throw new ConflictError(
      'EGJ_HOOK_EXISTS',
      `${file}: a ${name} hook genjob did not write (or one edited since) is there; it was left alone (merge the gate out of it by hand, or pass --force to remove it)`,
    );
  if (existing !== undefined) {
    try {
      unlinkSync(file);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw new IoError('unlink', file, err);
    }
  }
  const action = existing === undefined ? 'absent' : ours ? 'removed' : 'removed-foreign';
  const said =
    action === 'absent'
      ? `no ${name} hook at ${file}`
      : action === 'removed'
        ? `removed ${file}`
        : `removed ${file} (not exactly what genjob wrote: --force)`;
  const done = { ok: true, hook: name, file, action };
  if (name !== 'pre-merge-commit') return { human: said, json: done };
  const ff = await restoreFastForward(root);
  return { human: `${said}\n${ff.line}`, json: { ...done, merge_ff: ff.json } };
}

/** Put back the merge.ff install replaced, if merge.ff is still the false install set; the record goes. */
async function restoreFastForward(root: string): Promise<{ line: string; json: Record<string, unknown> }> {
  const now = await localConfig(root, 'merge.ff');
  const text = await localConfig(root, MERGE_FF_RECORD);
  let recorded: { was: string | null } | undefined;
  try {
    const was: unknown = text === null ? undefined : JSON.parse(text);
    if (was === null || typeof was === 'string') recorded = { was };
  } catch {
    // not what install writes: no record
  }
  if (text !== null) await git(root, ['config', '--local', '--unset-all', MERGE_FF_RECORD], { okCodes: [5] });
  if (recorded === undefined)
    return {
      line:
        now === 'false'
          ? 'left merge.ff=false as it is: hook install recorded no value it replaced (it was false already, or set by a genjob that kept no record); git config --unset merge.ff undoes it'
          : `merge.ff: nothing to put back (hook install recorded no value it replaced)`,
      json: { action: 'kept', now, why: 'no-record' },
    };
  if (now !== 'false')
    return {
      line: `left merge.ff${now === null ? ' unset' : `=${now}`} as it is: it was changed since hook install set it to false`,
      json: { action: 'kept', now, why: 'changed-since', was: recorded.was },
    };
  if (recorded.was === null)
    await git(root, ['config', '--local', '--unset-all', 'merge.ff'], { okCodes: [5] });
  else await git(root, ['config', '--local', 'merge.ff', recorded.was]);
  return {
    line:
      recorded.was === null
        ? 'unset merge.ff, as it was before hook install set it to false'
        : `set merge.ff back to ${recorded.was}, the value hook install replaced`,
    json: { action: 'restored', now: recorded.was },
  };
}
