// genjob verify --commits RANGE [--require-genjob PATHSPEC] [--require-check NAME] [--trust-ref REF |
// --trust-file PATH]: the merge gate (src/git/commit-gate.ts; the checks: src/check/commit-check.ts),
// under the trust policy of the range's base or of the flags, never the checkout's
// (src/git/gate-policy.ts). One line per judged commit, with a warning when its outputs add hidden
// characters; in text mode the first failure stops the walk, its line goes to stderr (exit 3) after the
// lines of the commits that passed. With --json every commit is checked and all failures are listed,
// still exit 3.

import { tagList } from '../apply/unified-diff.js';
import { CONFIG_FILE } from '../cli/config-file.js';
import type { CommandResult } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { type CommitCheck, checkCommits } from '../git/commit-gate.js';
import { baseTrustPolicy, POLICY_FILES } from '../git/gate-policy.js';
import type { VerifyOptions } from './verify.js';

/** The line of a commit that passed, with the check records it passed on. */
function line(
  c: CommitCheck,
  policyFrom: string,
  policyFiles: readonly string[],
  records?: ReadonlyArray<{ name: string; digest: string }>,
): string {
  const changes = c.changes_policy
    ? `; changes ${policyFiles.join(' or ')} (this gate used ${policyFrom})`
    : '';
  if (c.key === null) return `${c.commit.slice(0, 12)} ok: no Genjob-Key${changes}`;
  const checks = (records ?? []).map((p) => `, ${p.name} passed (record ${p.digest.slice(0, 12)})`).join('');
  // new tag characters are counted in hidden_added (hiddenAdded): they come only with it
  const tags = c.hidden_tags ? `; tag characters new in its outputs spell ${tagList(c.hidden_tags)}` : '';
  const hidden = c.hidden_added
    ? `; warning: its outputs add ${c.hidden_added} hidden character(s) (bidirectional controls or invisible code points), which can make code read differently from how it runs${tags}`
    : '';
  return `${c.commit.slice(0, 12)} ok: job ${c.key.slice(0, 12)}, exactly its ${c.outputs} output(s)${c.signer ? `, signed by ${c.signer}` : ''}${checks}${changes}${hidden}`;
}

export async function verifyCommits(o: VerifyOptions & { commits: string }): Promise<CommandResult> {
  if (o.key !== undefined || o.all)
    throw new UsageError('EGJ_USAGE', 'give --commits RANGE, or a key, or --all');
  const root = findRoot(o.root);
  const { policy, checkKeys, source, where } = await baseTrustPolicy(root, o.commits, {
    ...(o.trustRef !== undefined ? { trustRef: o.trustRef } : {}),
    ...(o.trustFile !== undefined ? { trustFile: o.trustFile } : {}),
    requireSignature: o.requireSignature === true,
  });
  // the checkers --require-check names are read from the base's config: it is policy too
  const policyFiles = o.requireCheck?.length ? [...POLICY_FILES, CONFIG_FILE] : POLICY_FILES;
  const checks = await checkCommits(root, {
    range: o.commits,
    policyFiles,
    requireGenjob: o.requireGenjob,
    policy,
    stopAtFirst: !o.json,
  });
  const records = o.requireCheck?.length
    ? await (await import('../check/commit-check.js')).requireCommitChecks(root, checks, o.requireCheck, {
        source,
        trusted: checkKeys,
      })
    : undefined;
  const failures = checks.filter((c) => !c.ok);
  const first = failures[0];
  // in text mode the walk ends at the first failure: the lines of the commits before it
  const shown = first && !o.json ? checks.slice(0, checks.indexOf(first)) : checks.filter((c) => c.ok);
  const passed = shown.map((c) => line(c, where, policyFiles, records?.get(c.commit)));
  const human =
    checks.length === 0
      ? `no generated commits in ${o.commits} (none carries a Genjob-Key trailer)`
      : passed.join('\n');
  return {
    human,
    json: {
      ok: failures.length === 0,
      ...(first
        ? {
            code: first.code,
            message: `${failures.length} of ${checks.length} generated commit(s) failed the gate; the first, ${first.commit.slice(0, 12)}: ${first.message}`,
          }
        : {}),
      range: o.commits,
      trust_policy: where,
      commits: checks.map((c) => (records?.has(c.commit) ? { ...c, checks: records.get(c.commit) } : c)),
      failures,
    },
    ...(first
      ? {
          exitCode: EXIT.REJECTED,
          // text mode: the first failure, as an error line (--json lists every one in `failures`)
          ...(o.json
            ? {}
            : { stderr: `genjob: ${first.code}: commit ${first.commit.slice(0, 12)}: ${first.message}\n` }),
        }
      : {}),
  };
}
