// `apply --commit` (and `revert --commit`) checks that a commit can be made before it writes anything: the genjob root must be
// the top of a git work tree (outputs' paths are the commit's paths; a bare repository or a root below
// the top would commit nothing or the wrong paths), and git must know who commits. Without this, apply
// wrote the files and only then failed to commit them.
import { realpathSync } from 'node:fs';
import { UsageError } from '../core/errors.js';
import { git } from './run-git.js';

type Committer = 'apply' | 'revert';

function refuse(root: string, rule: string, command: Committer): never {
  const done = command === 'apply' ? 'applied' : 'reverted';
  throw new UsageError(
    'EGJ_COMMIT_UNAVAILABLE',
    `${root}: ${command} --commit needs ${rule}; nothing was ${done} (drop --commit to ${command} without committing)`,
  );
}

export async function assertCanCommit(root: string, command: Committer = 'apply'): Promise<void> {
  const top = await git(root, ['rev-parse', '--is-inside-work-tree', '--show-toplevel'], {
    okCodes: [128],
  });
  const [inside, toplevel] = top.stdout.toString('utf8').trim().split('\n');
  if (inside === 'false')
    refuse(root, 'the root to be a git work tree (it is in a bare repository or a .git directory)', command);
  if (top.code !== 0 || inside !== 'true' || !toplevel)
    refuse(root, 'the root to be a git work tree (it is not in a git repository)', command);
  if (realpathSync(toplevel) !== realpathSync(root))
    refuse(root, `the root to be the top of its git work tree (${toplevel})`, command);
  for (const who of ['GIT_AUTHOR_IDENT', 'GIT_COMMITTER_IDENT']) {
    const ident = await git(root, ['var', who], { okCodes: [128] });
    if (ident.code !== 0)
      refuse(
        root,
        `a git identity (set user.name and user.email): ${ident.stderr.trim().split('\n').pop()}`,
        command,
      );
  }
}
