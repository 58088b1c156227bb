// genjob apply [KEY | --all | --run NAME [--gated]] [--dry-run] [--diff]: finish any apply a crash
// interrupted, then for each job verify again (never trust an earlier verify) and write it. An applied
// key is a no-op that says so (with --commit, it gets its commit if it has none: src/commands/apply-commit.ts).
// Over many jobs it goes on past a failure (what failed wrote nothing), like make -k, and ends with a
// summary naming each failure; the exit code is the worst. --stop-on-first stops at the first one;
// --remint-stale mints the successor of each stale job it meets (remint.ts). --gated applies exactly
// the jobs the run's current closed gate accepted. --diff prints the unified diff of what was written
// (or, with --dry-run, of what would be).
import { applyJob, recoverInterruptedApplies, type Write } from '../apply/apply-job.js';
import { readObject } from '../apply/tree-file.js';
import { unifiedDiff, withHiddenWarning } from '../apply/unified-diff.js';
import { type Failure, failureLines, failureOf, failureSummary, worstExit } from '../cli/failures.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { lookStore, openStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import type { RunKeys } from '../run/run-keys.js';
import { exists, sweepStaleTemps } from '../store/durable.js';
import { findJob, keysIn } from '../store/job-states.js';
import type { Store } from '../store/store.js';
import { prunedOn, readTombstone } from '../store/tombstone.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { requireSandbox } from '../verify/require-sandbox.js';
import { applyBacking, verifyKey } from '../verify/verify-key.js';
import { assertHeadHoldsInputs, type CheckTrailer, commitApplied, commitVerified } from './apply-commit.js';
import { assertOneSelection, selectKeys } from './verify.js';

export interface ApplyOptions extends CommonOptions {
  key?: string;
  all?: boolean;
  dryRun?: boolean;
  diff?: boolean;
  requireSignature?: boolean;
  requireSandbox?: boolean;
  /** One git commit per applied job holding exactly its outputs (src/git/commit-job.ts). */
  commit?: boolean;
  /** Checkers that must have a current pass record for the job (src/check/require-check.ts). */
  requireCheck?: string[];
  allowFlaky?: boolean;
  /** The received jobs of this run. */
  run?: string;
  /** With --run: exactly the jobs the run's current closed gate accepted. */
  gated?: boolean;
  /** Over many jobs: stop at the first failure instead of trying every job. */
  stopOnFirst?: boolean;
  /** Over many jobs: mint the successor of every stale job met (genjob remint). */
  remintStale?: boolean;
}

/** The passing records `--require-check` demands of `key` (none asked: none); refuses with exit 3. */
async function gateChecks(store: Store, key: string, o: ApplyOptions): Promise<CheckTrailer[]> {
  if (!o.requireCheck || o.requireCheck.length === 0) return [];
  const { requireChecks } = await import('../check/require-check.js');
  return requireChecks(store.root, key, o.requireCheck, o.allowFlaky === true);
}

/** The diff of writes already made, from the objects apply kept: before (or nothing) → after. */
function writtenDiff(store: Store, writes: readonly Write[]): string {
  return unifiedDiff(
    writes.map((w) => ({
      path: w.path,
      before: w.before === null ? null : readObject(store, w.before),
      after: readObject(store, w.after),
    })),
  );
}

export async function apply(o: ApplyOptions): Promise<CommandResult> {
  const many = o.all === true || o.run !== undefined;
  if ((o.stopOnFirst || o.remintStale) && !many)
    throw new UsageError(
      'EGJ_USAGE',
      `${o.stopOnFirst ? '--stop-on-first' : '--remint-stale'} goes with --all or --run NAME`,
    );
  if (o.gated && o.run === undefined) throw new UsageError('EGJ_USAGE', '--gated goes with --run NAME');
  // --gated takes its keys from the gate record, not selectKeys: a key beside --run is refused here
  assertOneSelection(o);
  if (o.commit && o.dryRun)
    throw new UsageError('EGJ_USAGE', '--commit writes a commit; it cannot go with --dry-run');
  if (o.allowFlaky && !o.requireCheck?.length)
    throw new UsageError('EGJ_USAGE', '--allow-flaky goes with --require-check NAME');
  // a checker the config does not declare can never pass: bad usage, not a missing record to go and make
  if (o.requireCheck?.length)
    await (await import('../check/declared-checkers.js')).refuseUndeclared(
      lookStore(o),
      '--require-check',
      o.requireCheck,
    );
  // refused before anything is written: outside a git work tree apply used to write, then fail to commit
  if (o.commit) await (await import('../git/commit-preflight.js')).assertCanCommit(lookStore(o).root);
  const store = openStore(o);
  // a run's keys count only from a run the user minted: a branch's manifest could name other jobs
  const run = o.run === undefined ? undefined : await sealedRun(store, o.run);
  // temps of applies (and workers) that died mid-publish in leases/ and objects/ (.gen/tmp: openStore)
  if (!o.dryRun)
    sweepStaleTemps(store, undefined, undefined, [store.layout.dir('leases'), store.layout.dir('objects')]);
  const policy = loadTrustPolicy(store.root, { requireSignature: o.requireSignature === true });
  // an interrupted apply is finished only once its job and receipt verify now, as any apply's must
  const vouch = async (key: string) => {
    const b = await applyBacking(store, key, policy);
    if (o.requireSandbox) requireSandbox(b.receipt, store.layout.receipt(key));
    return b;
  };
  const recovered = o.dryRun ? [] : await recoverInterruptedApplies(store, { vouch });
  const isApplied = (key: string) => exists(store, store.layout.jobFile('applied', key));
  // --all --commit also looks at applied jobs: one applied without --commit gets its commit now
  const { keys: selected, skipped } = o.gated
    ? { keys: await gatedKeys(store, o.run), skipped: 0 }
    : selectKeys(store, o, 'received', ['received', 'applied'], run?.current);
  const keys =
    o.commit && o.all && o.run === undefined
      ? [...new Set([...selected, ...keysIn(store, 'applied')])].sort()
      : selected;
  // a successor's link is sealed under the user's secret, so a gate follows it (store/supersede.ts)
  const reader = o.remintStale
    ? {
        inputs: (await import('./remint.js')).readerFor(store, {}),
        secret: await (await import('../remote/cache-mac.js')).requireUserSecret(),
      }
    : undefined;
  const reminted: Array<{ key: string; successor: string }> = [];
  const commitOf = o.commit ? await keysCommitted(store, keys.filter(isApplied)) : new Map<string, string>();
  const results: Array<Record<string, unknown>> = [];
  const lines: string[] = recovered.map((k) => `${k.slice(0, 12)} finished an apply interrupted by a crash`);
  let alreadyCommitted = 0;
  const failures: Failure[] = [];
  // a dry run plans each job on the tree the jobs before it would leave, so it fails where a real run would
  const dryRunTree = o.dryRun ? new Map<string, Buffer>() : undefined;
  for (const key of keys) {
    try {
      if (isApplied(key) && !o.commit) {
        results.push({ key, status: 'already-applied' });
        lines.push(`${key.slice(0, 12)} already applied`);
        continue;
      }
      if (isApplied(key)) {
        const done = await commitApplied(store, key, policy, {
          committedIn: commitOf.get(key),
          requireSandbox: o.requireSandbox,
          skipChanged: o.all === true,
          gate: () => gateChecks(store, key, o),
        });
        results.push(done.result);
        // under --all, jobs applied and committed long ago are counted, not listed one by one
        if (o.all && done.result.committedBefore) alreadyCommitted++;
        else lines.push(...done.lines);
        continue;
      }
      // a key gc pruned after its apply is applied all the same, as mint says of its work order (with
      // --commit it goes on to verify, which refuses it: nothing is left to commit from). The tombstone is
      // read first: for any other key that is one missing file, where finding its job stats every state.
      const tomb = o.commit ? undefined : readTombstone(store, key);
      if (tomb?.state === 'applied' && !findJob(store, key)) {
        results.push({ key, status: 'already-applied', pruned_on: prunedOn(tomb) });
        lines.push(`${key.slice(0, 12)} already applied (pruned on ${prunedOn(tomb)})`);
        continue;
      }
      const v = await verifyKey(store, key, policy);
      if (o.requireSandbox) requireSandbox(v.receipt, store.layout.receipt(key));
      const checks = await gateChecks(store, key, o);
      if (o.commit) await assertHeadHoldsInputs(store, v.job, 'nothing was written');
      const outcome = await applyJob(
        {
          store,
          job: v.job,
          jobDigest: v.jobDigest,
          receiptSha256: v.receiptSha256,
          epoch: v.receipt.epoch,
          outputs: v.receipt.outputs,
        },
        { dryRun: o.dryRun === true, diff: o.diff === true, dryRunTree },
      );
      const committed =
        o.commit && outcome.status !== 'dry-run' ? await commitVerified(store, v, checks) : undefined;
      const commitField = committed ? { commit: committed.commit ?? null } : {};
      const files = outcome.writes.map((w) => `  ${w.before === null ? 'create' : 'update'} ${w.path}`);
      const colon = files.length > 0 ? ':' : '';
      if (outcome.status === 'dry-run') {
        results.push({ key, ...outcome });
        lines.push(`${key.slice(0, 12)} would write ${outcome.writes.length} file(s)${colon}`, ...files);
        if (outcome.diff) lines.push(withHiddenWarning(outcome.diff).replace(/\n$/, ''));
      } else if (outcome.status === 'already-applied') {
        results.push({ key, ...outcome, ...commitField });
        lines.push(`${key.slice(0, 12)} already applied`);
      } else {
        const diff = o.diff ? writtenDiff(store, outcome.writes) : undefined;
        results.push({ key, ...outcome, ...(diff === undefined ? {} : { diff }), ...commitField });
        lines.push(
          `${key.slice(0, 12)} applied ${outcome.writes.length} file(s)${outcome.recovered ? ' (finished after a crash)' : ''}${colon}`,
          ...files,
        );
        if (diff) lines.push(withHiddenWarning(diff).replace(/\n$/, ''));
      }
      if (committed) lines.push(committed.line);
    } catch (err) {
      if (!many) throw err; // one key: the error alone says it all
      const failure = failureOf(key, err);
      if (reader && failure.code === 'EGJ_STALE' && !o.dryRun) {
        const next = await remintStale(store, key, reader);
        if (next !== undefined) {
          reminted.push({ key, successor: next });
          results.push({ key, status: 'reminted', successor: next });
          lines.push(
            `${key.slice(0, 12)} stale: reminted as ${next.slice(0, 12)} (generate it with genjob work)`,
          );
          continue;
        }
      }
      failures.push(failure);
      results.push({ key, status: 'failed', code: failure.code, message: failure.message });
      const left = keys.length - results.length;
      lines.push(
        `${key.slice(0, 12)} ${o.dryRun ? 'would not apply' : 'not applied'} (${failure.code})${o.stopOnFirst && left > 0 ? `; stopped, ${left} job(s) not tried` : ''}`,
      );
      if (o.stopOnFirst) break;
    }
  }
  if (alreadyCommitted > 0) lines.push(`${alreadyCommitted} applied job(s) already committed`);
  if (keys.length === 0 && recovered.length === 0)
    lines.push(`nothing to apply (no received jobs${o.run ? ` in run ${o.run}` : ''})`);
  if (skipped > 0) lines.push(`${skipped} job(s) of run ${o.run} not received yet (not applied)`);
  if (reminted.length > 0)
    lines.push(`${reminted.length} stale job(s) reminted: genjob work generates their successors`);
  if (failures.length === 0)
    return {
      human: lines.join('\n'),
      json: { ok: true, recovered, results, ...(reminted.length > 0 ? { reminted } : {}) },
    };
  if (many && failures.length > 0) lines.push(failureSummary(failures, keys.length, 'not applied'));
  const first = failures[0]!;
  return {
    exitCode: worstExit(failures.map((f) => f.exitCode)),
    human: lines.join('\n'),
    stderr: failureLines(failures),
    json: {
      ok: false,
      code: first.code,
      message: first.message,
      recovered,
      results,
      failed: failures.map(({ key, code, message }) => ({ key, code, message })),
      ...(reminted.length > 0 ? { reminted } : {}),
    },
  };
}

/** Remint a stale job for --remint-stale: its successor's key, or undefined when it could not be. */
async function remintStale(
  store: Store,
  key: string,
  reader: { inputs: import('./mint-inputs.js').InputReader; secret: Buffer },
): Promise<string | undefined> {
  const { remintKey } = await import('./remint.js');
  try {
    return (await remintKey(store, key, reader.inputs, reader.secret)).successor;
  } catch (err) {
    failureOf(key, err); // a bug is thrown on; a refusal leaves the stale failure to be reported
    return undefined;
  }
}

/** The run's keys, followed along the user's own remints, once it is a run the user minted (EGJ_RUN_UNSEALED otherwise). */
async function sealedRun(store: Store, run: string): Promise<RunKeys> {
  const { sealedRunKeys } = await import('../run/run-keys.js');
  const { requireUserSecret } = await import('../remote/cache-mac.js');
  return sealedRunKeys(store, run, await requireUserSecret(), 'nothing was applied');
}

/** --gated: the jobs the run's newest gate record accepted, when the user's gate sealed it and it is still current and met. */
async function gatedKeys(store: Store, run: string | undefined): Promise<string[]> {
  if (run === undefined) throw new UsageError('EGJ_USAGE', '--gated goes with --run NAME');
  const { acceptedKeys } = await import('../run/gate-accepted.js');
  const { requireUserSecret } = await import('../remote/cache-mac.js');
  return acceptedKeys(store, run, (await import('./gate.js')).checkReader, await requireUserSecret());
}

/** key → the commit on HEAD's history already carrying its Genjob-Key trailer. */
async function keysCommitted(store: Store, keys: readonly string[]): Promise<Map<string, string>> {
  const { commitsCarryingKeys } = await import('../git/key-commits.js');
  return commitsCarryingKeys(store.root, new Set(keys));
}
