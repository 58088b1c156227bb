// genjob verify [KEY | --all]: check receipts and bytes (the verify rules in docs/exit-codes.md); exit 3
// naming the rule broken. Writes nothing. With --all (or --run NAME: the run's jobs that have a receipt),
// every job is checked and every failing one is reported (one stderr line each), like make -k; the
// exit code is the worst seen. --stop-on-first stops at the first failure.

import { type Failure, failureFields, failureOf, failureSummary, worstFailure } from '../cli/failures.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { runKeys } from '../run/run-keys.js';
import { findJob, keysIn, resolveKey } from '../store/job-states.js';
import type { JobState } from '../store/layout.js';
import type { Store } from '../store/store.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { requireSandbox } from '../verify/require-sandbox.js';
import { verifyKey } from '../verify/verify-key.js';

export interface VerifyOptions extends CommonOptions {
  key?: string;
  all?: boolean;
  requireSignature?: boolean;
  requireSandbox?: boolean;
  /** The merge gate: check the generated commits of this range (src/commands/verify-commits.ts). */
  commits?: string;
  requireGenjob?: string[];
  /** With --commits: checkers each generated commit needs a current pass record of (src/check/commit-check.ts). */
  requireCheck?: string[];
  /** The jobs of this run (keeps going past failures, like --all). */
  run?: string;
  /** With --all or --run: stop at the first failure instead of trying every job. */
  stopOnFirst?: boolean;
  /** With --commits: the commit to read the gate's policy files from, instead of the range's base. */
  trustRef?: string;
  /** With --commits: the trust file to use, instead of the base's genjob-trust.json. */
  trustFile?: string;
}

/** Which jobs are `state` now, for a user who named none: a few short keys, or that there are none. */
function waitingHint(store: Store, state: 'received'): string {
  const keys = keysIn(store, state);
  if (keys.length === 0) return `no job is ${state} yet (genjob status shows where each one is)`;
  const shown = keys.slice(0, 3).map((k) => k.slice(0, 12));
  return `${state}: ${shown.join(', ')}${keys.length > shown.length ? ` and ${keys.length - shown.length} more` : ''}`;
}

/**
 * The keys a verify/apply invocation names: one key (or prefix), --all of a state, or the jobs of a run
 * (--run NAME, with or without --all) that are in one of `runStates`; `skipped` counts the run's others.
 */
/** A key names one job: beside --all or --run NAME it was read as one of them (apply --gated dropped it). */
export function assertOneSelection(o: { key?: string; all?: boolean; run?: string }): void {
  if ((o.all || o.run !== undefined) && o.key)
    throw new UsageError('EGJ_USAGE', `give a key or ${o.run !== undefined ? '--run' : '--all'}, not both`);
}

export function selectKeys(
  store: Store,
  o: { key?: string; all?: boolean; run?: string },
  allState: 'received',
  runStates: readonly JobState[] = ['received', 'applied', 'reverted'],
  /** The run's keys as the caller resolved them already (apply's: the user's sealed run). */
  runCurrent?: readonly string[],
): { keys: string[]; skipped: number } {
  assertOneSelection(o);
  if (o.run !== undefined) {
    const keys = runCurrent ?? runKeys(store, o.run).current;
    const chosen = keys.filter((k) => runStates.includes(findJob(store, k)?.state as JobState));
    return { keys: chosen, skipped: keys.length - chosen.length };
  }
  if (o.all) return { keys: keysIn(store, allState), skipped: 0 };
  if (!o.key)
    throw new UsageError(
      'EGJ_USAGE',
      `name a key (or a unique prefix of 4+ characters), or pass --all or --run NAME; ${waitingHint(store, allState)}`,
    );
  return { keys: [resolveKey(store, o.key)], skipped: 0 };
}

export async function verify(o: VerifyOptions): Promise<CommandResult> {
  for (const [flag, given] of [
    ['--require-genjob', o.requireGenjob],
    ['--trust-ref', o.trustRef],
    ['--trust-file', o.trustFile],
    ['--require-check', o.requireCheck],
  ] as const)
    if (given !== undefined && o.commits === undefined)
      throw new UsageError('EGJ_USAGE', `${flag} goes with --commits RANGE`);
  if (o.commits !== undefined)
    return (await import('./verify-commits.js')).verifyCommits({ ...o, commits: o.commits });
  const many = o.all === true || o.run !== undefined;
  if (o.stopOnFirst && !many)
    throw new UsageError('EGJ_USAGE', '--stop-on-first goes with --all or --run NAME');
  const store = lookStore(o);
  const { keys, skipped } = selectKeys(store, o, 'received');
  const policy = loadTrustPolicy(store.root, { requireSignature: o.requireSignature === true });
  const verified = [];
  const failures: Failure[] = [];
  const lines: string[] = [];
  for (const key of keys) {
    try {
      const v = await verifyKey(store, key, policy);
      if (o.requireSandbox) requireSandbox(v.receipt, store.layout.receipt(key));
      verified.push({
        key,
        outputs: v.receipt.outputs.length,
        signer: v.signer,
        epoch: v.receipt.epoch,
        state: v.state,
      });
      lines.push(
        `${key.slice(0, 12)} ok: ${v.receipt.outputs.length} output(s), epoch ${v.receipt.epoch}${v.signer ? `, signed by ${v.signer}` : ''}`,
      );
    } catch (err) {
      if (!many) throw err; // one key: the error alone says it all
      const f = failureOf(key, err);
      failures.push(f);
      lines.push(`${key.slice(0, 12)} FAILED: ${f.code}`);
      if (o.stopOnFirst) {
        const left = keys.length - verified.length - failures.length;
        if (left > 0) lines.push(`stopped at the first failure (--stop-on-first); ${left} job(s) not tried`);
        break;
      }
    }
  }
  if (keys.length === 0) lines.push(`nothing to verify (no received jobs${o.run ? ` in run ${o.run}` : ''})`);
  if (skipped > 0) lines.push(`${skipped} job(s) of run ${o.run} have no receipt yet (not verified)`);
  const summary = failureSummary(failures, keys.length, 'failed verification');
  if (failures.length > 0) lines.push(summary);
  return {
    human: lines.join('\n'),
    ...failureFields(failures),
    json: {
      ok: failures.length === 0,
      ...worstFailure(failures, summary),
      verified,
      failed: failures.map(({ key, code, message }) => ({ key, code, message })),
      ...(o.run !== undefined ? { run: o.run, skipped } : {}),
    },
  };
}
