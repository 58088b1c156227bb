// genjob verify --commits RANGE [--require-genjob PATHSPEC] [--require-check NAME]: the merge gate
// (src/git/commit-gate.ts; the checks: src/check/commit-check.ts). One line per checked commit; the
// first failure is exit 3 naming the commit and the rule. With --json every commit is checked and all
// failures are listed, still exit 3.
import type { CommandResult } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { RejectedError, UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { type CommitCheck, checkCommits } from '../git/commit-gate.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import type { VerifyOptions } from './verify.js';

/** A generated commit the gate refused: exit 3, the commit and the rule in the message. */
export class CommitRejectedError extends RejectedError {
  constructor(readonly check: CommitCheck) {
    super(check.code!, `commit ${check.commit.slice(0, 12)}: ${check.message}`);
  }
  override details(): Record<string, unknown> {
    return { commit: this.check.commit, key: this.check.key };
  }
}

function line(c: CommitCheck, passed?: ReadonlyArray<{ name: string; digest: string }>): string {
  const key = c.key ? `job ${c.key.slice(0, 12)}` : 'no Genjob-Key';
  if (!c.ok) return `${c.commit.slice(0, 12)} FAILED ${c.code}: ${c.message}`;
  const checks = (passed ?? []).map((p) => `, ${p.name} passed (record ${p.digest.slice(0, 12)})`).join('');
  return `${c.commit.slice(0, 12)} ok: ${key}, exactly its ${c.outputs} output(s)${c.signer ? `, signed by ${c.signer}` : ''}${checks}`;
}

export async function verifyCommits(o: VerifyOptions & { commits: string }): Promise<CommandResult> {
  const store = openStore(o);
  const policy = loadTrustPolicy(store.root, { requireSignature: o.requireSignature === true });
  if (o.key !== undefined || o.all)
    throw new UsageError('EGJ_USAGE', 'give --commits RANGE, or a key, or --all');
  const checks = await checkCommits(store, {
    range: o.commits,
    requireGenjob: o.requireGenjob,
    policy,
    stopAtFirst: !o.json,
  });
  const passed = o.requireCheck?.length
    ? await (await import('../check/commit-check.js')).requireCommitChecks(
        store,
        o.commits,
        checks,
        o.requireCheck,
      )
    : undefined;
  const failures = checks.filter((c) => !c.ok);
  if (failures.length > 0 && !o.json) throw new CommitRejectedError(failures[0]!);
  const human =
    checks.length === 0
      ? `no generated commits in ${o.commits} (none carries a Genjob-Key trailer)`
      : checks.map((c) => line(c, passed?.get(c.commit))).join('\n');
  return {
    human,
    json: {
      ok: failures.length === 0,
      range: o.commits,
      commits: checks.map((c) => (passed?.has(c.commit) ? { ...c, checks: passed.get(c.commit) } : c)),
      failures,
    },
    ...(failures.length > 0 ? { exitCode: EXIT.REJECTED } : {}),
  };
}
