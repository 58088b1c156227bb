// Bench stage check: `genjob check` of one received job with a trivial checker (`true`) on a
// repository of 1,000 committed files, next to the floor a careful user would otherwise pay: a
// `git worktree add` of HEAD and the same command run in it. genjob's side includes what makes the
// check trustworthy: verifying the receipt, the private index with the job's outputs, a fresh copy
// of the tree, bubblewrap, the record. Each run starts without a record (removed untimed), and each
// baseline with no worktree, so both build their tree every time.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeJob, receivedJob, sha256, smallFiles } from './fixtures.mjs';

const FILES = 1000;

/** The stage, given run.mjs's measuring helpers. */
export function checkStages({ alternate, record, genjob, run, TMP }) {
  return {
    check() {
      const root = join(TMP, 'check');
      rmSync(root, { recursive: true, force: true });
      mkdirSync(root, { recursive: true });
      const env = {
        ...process.env,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_AUTHOR_NAME: 'b',
        GIT_AUTHOR_EMAIL: 'b@b',
        GIT_COMMITTER_NAME: 'b',
        GIT_COMMITTER_EMAIL: 'b@b',
      };
      const files = smallFiles(root, FILES, 200);
      writeFileSync(
        join(root, 'genjob.config.json'),
        JSON.stringify({ checkers: { trivial: { run: 'true' } } }),
      );
      writeFileSync(join(root, '.gitignore'), '.gen/\n');
      run('git', ['init', '-q'], { cwd: root, env });
      run('git', ['add', '-A'], { cwd: root, env });
      run('git', ['commit', '-qm', 'bench'], { cwd: root, env });
      genjob(['init'], { cwd: root });
      const target = files[0];
      const made = makeJob('bench check', [{ path: target.path, sha256: target.sha256 }]);
      const data = Buffer.from('changed by the job\n');
      receivedJob(root, made, [{ path: target.path, sha256: sha256(data), bytes: data.length }], (file) =>
        writeFileSync(file, data),
      );
      const tree = join(TMP, 'check-worktree');
      const m = alternate({
        prepare: () => {
          rmSync(join(root, '.gen', 'checks'), { recursive: true, force: true });
          run('git', ['worktree', 'remove', '--force', tree], { cwd: root, env, allowFail: true });
          run('git', ['worktree', 'prune'], { cwd: root, env });
        },
        genjob: () => {
          const r = genjob(['check', made.key], { cwd: root });
          if (!/trivial {2}pass/.test(r.stdout)) throw new Error(`check: ${r.stdout}${r.stderr}`);
          return r.ms;
        },
        baseline: () =>
          run('sh', ['-c', `git worktree add -q --detach "${tree}" HEAD && cd "${tree}" && true`], {
            cwd: root,
            env,
          }).ms,
      });
      run('git', ['worktree', 'remove', '--force', tree], { cwd: root, env, allowFail: true });
      record('check', {
        ...m,
        target: 1.5,
        note: `check of 1 job (1 output) with \`true\` on ${FILES.toLocaleString('en')} files; baseline: git worktree add + the command`,
      });
    },
  };
}
