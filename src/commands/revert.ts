// genjob revert KEY [--commit]: put back the bytes an applied job replaced, from objects/.
// Refused (exit 4, nothing written) if any of its files changed after the apply. The job is then in
// reverted/; reverting it again is a no-op that says so, and `apply KEY` writes it again. When the job's
// generated commit (apply --commit) is on HEAD, the restored files are uncommitted changes, and revert says
// so; --commit commits them as a revert of that commit (also after a plain revert, while the tree still
// holds what revert restored). A revert commit carries Genjob-Revert, so `apply --commit` commits again.

import { staleError } from '../apply/apply-plan.js';
import type { AppliedRecord } from '../apply/apply-records.js';
import { revertApplied } from '../apply/revert.js';
import { currentFile } from '../apply/tree-file.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore, openStore } from '../cli/root.js';
import type { KeyCommit } from '../git/key-commits.js';
import { resolveKey } from '../store/job-states.js';
import type { Store } from '../store/store.js';

export async function revert(o: CommonOptions & { key: string; commit?: boolean }): Promise<CommandResult> {
  // refused before anything is written, as apply --commit is
  if (o.commit)
    await (await import('../git/commit-preflight.js')).assertCanCommit(lookStore(o).root, 'revert');
  const store = openStore(o);
  const key = resolveKey(store, o.key);
  const short = key.slice(0, 12);
  const { reverted, already, record } = await revertApplied(store, key);
  const lines = reverted.map((w) => `  ${w.before === null ? 'removed' : 'restored'} ${w.path}`);
  const head = already
    ? `${short} already reverted (genjob apply ${short} writes it again)`
    : `${short} reverted ${reverted.length} file(s)${lines.length ? ':' : ''}`;
  const { newestKeyCommits } = await import('../git/key-commits.js');
  const newest = (await newestKeyCommits(store.root, new Set([key]))).get(key);
  const json = { ok: true, key, status: already ? 'already-reverted' : 'reverted', reverted };
  if (o.commit) {
    const c = await commitRevert(store, record, newest);
    return { human: [head, ...lines, c.line].join('\n'), json: { ...json, commit: c.commit } };
  }
  const generated = newest?.kind === 'generated' ? newest.commit : undefined;
  const note = generated
    ? [
        `the generated commit ${generated.slice(0, 12)} stays on HEAD: the restored files are uncommitted changes (genjob revert ${short} --commit commits them as its revert)`,
      ]
    : [];
  return {
    human: [head, ...lines, ...note].join('\n'),
    json: { ...json, generated_commit: generated ?? null },
  };
}

/** The revert commit: every file of the apply as it was before it, with the job's key and receipt in trailers. */
async function commitRevert(
  store: Store,
  record: AppliedRecord,
  newest: KeyCommit | undefined,
): Promise<{ commit: string | null; line: string }> {
  if (newest?.kind === 'revert')
    return { commit: newest.commit, line: `  already committed in ${newest.commit.slice(0, 12)}` };
  for (const w of record.writes) {
    const now = currentFile(store, w.path).sha256;
    if (now !== w.before)
      throw staleError(
        w.path,
        w.before,
        now,
        `it changed after the revert, and the revert commit must hold what revert restored; nothing was committed`,
      );
  }
  const { commitFiles } = await import('../git/commit-job.js');
  const { revertMessage } = await import('../git/trailers.js');
  const generated = newest?.kind === 'generated' ? newest.commit : undefined;
  const c = await commitFiles(store, {
    files: record.writes.map((w) => ({
      path: w.path,
      source: w.before === null ? null : store.layout.object(w.before),
    })),
    message: revertMessage(record.job.instruction, record.key, record.receipt_sha256, generated),
    reflog: `genjob revert --commit ${record.key.slice(0, 12)}`,
  });
  if (c.status === 'unchanged')
    return {
      commit: null,
      line: '  nothing to commit: HEAD already holds the files as they were before the apply',
    };
  return {
    commit: c.commit,
    line: `  committed ${c.commit.slice(0, 12)}${generated ? `, reverting ${generated.slice(0, 12)}` : ''}`,
  };
}
