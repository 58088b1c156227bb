// genjob hook install [--pre-merge-commit] [--force]: write the gate's hook into the clone's hooks
// directory (core.hooksPath respected). A hook whose bytes are exactly what genjob wrote (its last line
// sums the rest) is rewritten; any other — a team's own, or genjob's with checks merged in by hand — is
// refused (exit 4) unless --force, so no one's hook is lost silently.
// git runs no pre-merge-commit hook on a fast-forward (it makes no merge commit), so installing that hook
// also sets merge.ff=false in the repository's own config: every `git merge` then makes a merge commit,
// which the hook checks. The line saying so names the value it replaced.
import { mkdirSync } from 'node:fs';
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

export async function hookInstall(o: HookOptions): Promise<CommandResult> {
  const root = findRoot(o.root);
  const name: HookName = o.preMergeCommit ? 'pre-merge-commit' : 'pre-push';
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
  const ours = existing !== undefined && isGenjobHook(existing);
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

/** Set merge.ff=false in the repository's own config; the value it held before (null: none). */
async function noFastForward(root: string): Promise<string | null> {
  const r = await git(root, ['config', '--local', '--get', 'merge.ff'], { okCodes: [1] });
  const was = r.code === 0 ? r.stdout.toString('utf8').replace(/\n$/, '') : null;
  await git(root, ['config', '--local', 'merge.ff', 'false']);
  return was;
}
