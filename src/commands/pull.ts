// genjob pull [REMOTE]: fetch the remote's refs/genjob/keys/* and refs/genjob/checks/* into
// refs/genjob-pulled/<kind>/* for the merge gate, and check each key's material and each check record as
// hostile input (src/git/read-material.ts, src/check/check-refs.ts). Pulled material serves
// verification only: nothing enters .gen/, so no pulled job is ever in the set that `apply --all`,
// `status` or `work` act on, and a job gc pruned here cannot come back. A ref that cannot be used is
// named on stderr and skipped (exit 0): only a gate that needs that key fails, saying why.
// The fetch itself is bounded (src/git/fetch-material.ts): git's strict object checks refuse a malformed
// object, and the ref that points to it is found and skipped by itself (exit 0, named like any other ref
// skipped: one pusher's bad ref must not stop every pull); the fetches may write no more than --max-bytes
// (exit 3, EGJ_PULL_TOO_LARGE) and are killed with all they started once --timeout has passed since the
// pull began (exit 75, EGJ_GIT_TIMEOUT: try again); each time no ref moves and nothing fetched is kept.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { parseWait } from '../core/duration.js';
import { GitFailedError, GitTimedOutError } from '../core/errors.js';
import { fetchKeyRefs } from '../git/fetch-material.js';
import { KEY_REFS, PULLED_REFS } from '../git/material-refs.js';
import { checkRemote, defaultRemote } from '../git/push-material.js';
import { MAX_PULL_BYTES, type PulledRef, readPulled } from '../git/read-material.js';

/**
 * How long a pull's fetch may take by default: ample for the largest pull (--max-bytes) on an ordinary
 * link, and the same as a generator's default time limit; a stalled remote holds a pre-push hook no longer.
 */
export const DEFAULT_PULL_TIMEOUT = '10m';
/** The most a pull's fetch may write to one file by default: the most one pull reads (MAX_PULL_BYTES). */
export const DEFAULT_PULL_MAX_BYTES = MAX_PULL_BYTES;

export interface PullOptions extends CommonOptions {
  remote?: string;
  /** A duration (30s, 10m): the pull's fetches are killed after it, counted from the start of the pull. */
  timeout?: string;
  /** Bytes: the most the pull's fetches may write in all (their packs). */
  maxBytes?: number;
}

export async function pull(o: PullOptions): Promise<CommandResult> {
  const timeout = o.timeout ?? DEFAULT_PULL_TIMEOUT;
  const timeoutMs = parseWait(timeout, '--timeout');
  const maxBytes = o.maxBytes ?? DEFAULT_PULL_MAX_BYTES;
  const root = findRoot(o.root);
  const remote = checkRemote(o.remote ?? (await defaultRemote(root)));
  const { refs, skipped } = await fetchKeyRefs(root, remote, { timeoutMs, maxBytes }).catch(
    (err: unknown) => {
      if (err instanceof GitTimedOutError)
        throw err.within(
          `pull from ${remote}`,
          `no ref changed and nothing it fetched was kept; try again, or give a longer --timeout than ${timeout}`,
        );
      throw err instanceof GitFailedError ? err.within(`pull from ${remote}`) : err;
    },
  );
  // refs whose objects git's checks refused, each by itself: nothing of them was kept
  const refused: Array<{ ref: string; rule: string }> = [...skipped];
  const named: Array<PulledRef & { key: string }> = [];
  // named as the remote names them: that is where someone would look
  const theirs = (ref: string) => ref.replace(PULLED_REFS, KEY_REFS);
  for (const r of refs) {
    if (r.key === null)
      refused.push({ ref: theirs(r.ref), rule: 'the ref does not name one key (refs/genjob/keys/<64 hex>)' });
    else named.push(r as PulledRef & { key: string });
  }
  const keys: string[] = [];
  for (const outcome of await readPulled(root, named)) {
    if (outcome.ok) keys.push(outcome.material.key);
    else refused.push({ ref: theirs(outcome.ref), rule: outcome.rule });
  }
  // check records, mirrored by the same fetch: read here only to name the refs a gate could not use
  const { PULLED_CHECK_REFS, recordsUnder } = await import('../check/check-refs.js');
  const checks = await recordsUnder(root, PULLED_CHECK_REFS);
  refused.push(...checks.refused);
  const checkRecords = checks.records.map((r) => ({ key: r.key, checker: r.checker, digest: r.digest }));
  const summary = `${keys.length} key(s) of verification material from ${remote}${checkRecords.length > 0 ? `, ${checkRecords.length} check record(s)` : ''}${refused.length > 0 ? `, ${refused.length} ref(s) skipped` : ''}`;
  return {
    human: summary,
    json: { ok: true, remote, keys, checks: checkRecords, refused },
    ...(refused.length > 0
      ? {
          stderr: refused
            .map(
              (f) =>
                `genjob: warning: ${remote} ${f.ref}: ${f.rule}; skipped (a gate that needs this key fails)\n`,
            )
            .join(''),
        }
      : {}),
  };
}
