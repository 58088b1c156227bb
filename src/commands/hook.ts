// genjob hook install [--pre-merge-commit] [--force]: write the gate's hook into the clone's hooks
// directory (core.hooksPath respected). A hook whose bytes are exactly what genjob wrote (its last line
// sums the rest) is rewritten; any other — a team's own, or genjob's with checks merged in by hand — is
// refused (exit 4) unless --force, so no one's hook is lost silently.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { ConflictError, errnoOf, IoError } from '../core/errors.js';
import { readText } from '../core/read-text.js';
import { type HookName, hookScript, isGenjobHook } from '../git/hook-script.js';
import { gitText } from '../git/run-git.js';
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
  mkdirSync(hooks, { recursive: true });
  replaceFile({ fs: nodeFs }, file, Buffer.from(hookScript(name, process.execPath, process.argv[1]!)), 0o755);
  const replaced = existing === undefined ? 'installed' : ours ? 'rewrote' : 'replaced';
  return { human: `${replaced} ${file}`, json: { ok: true, hook: name, file, action: replaced } };
}
