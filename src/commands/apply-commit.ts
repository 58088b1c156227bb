// The --commit part of `genjob apply`: one commit per job holding exactly its verified outputs
// (src/git/commit-job.ts). A job applied earlier without its commit gets it now, when the work tree still
// holds its outputs and no commit on HEAD's history carries its Genjob-Key; one that has it is left alone.
// HEAD must hold the job's inputs and read files as minted (the gate refuses a generated commit on
// another base), and each commit's material is recorded under refs/genjob/keys/<key> at once, so this
// clone's own gate (the pre-push hook) finds it before `genjob push` has run.

import { staleError } from '../apply/apply-plan.js';
import { currentFile } from '../apply/tree-file.js';
import type { Job } from '../core/job.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import type { Store } from '../store/store.js';
import { requireSandbox } from '../verify/require-sandbox.js';
import { type Verified, verifyKey } from '../verify/verify-key.js';

/** Refuse (EGJ_STALE, nothing written) a job whose inputs or read files HEAD does not hold as minted: its commit would fail the gate. */
export async function assertHeadHoldsInputs(store: Store, job: Job, context: string): Promise<void> {
  const { git } = await import('../git/run-git.js');
  const { staleInput } = await import('../git/minted-base.js');
  const head = await git(store.root, ['rev-parse', '-q', '--verify', 'HEAD^{commit}'], { okCodes: [1] });
  const { stale } = await staleInput(
    store.root,
    head.code === 0 ? head.stdout.toString('utf8').trim() : null,
    job,
  );
  if (stale !== null)
    throw staleError(
      `HEAD:${stale.path}`,
      stale.minted,
      stale.heldSha256,
      `a generated commit must sit on the history its job was minted from (commit the inputs first, or apply without --commit); ${context}`,
    );
}

/** A checker's passing record, named in the commit by a Genjob-Check trailer. */
export interface CheckTrailer {
  name: string;
  digest: string;
}

/** One commit holding exactly this job's verified outputs (with a Genjob-Check trailer per record); its material recorded as this clone's key ref. */
export async function commitVerified(
  store: Store,
  v: Verified,
  checks: readonly CheckTrailer[] = [],
): Promise<{ commit?: string; line: string }> {
  const { commitJob } = await import('../git/commit-job.js');
  const c = await commitJob(store, {
    key: v.job.key,
    instruction: v.job.instruction,
    receiptSha256: v.receiptSha256,
    signer: v.signer,
    outputs: v.receipt.outputs,
    checks,
  });
  await recordMaterial(store, v.job.key);
  return c.status === 'committed'
    ? { commit: c.commit, line: `  committed ${c.commit.slice(0, 12)}` }
    : { line: '  nothing to commit: HEAD already holds these bytes' };
}

/**
 * Build refs/genjob/keys/<key> and the key's refs/genjob/checks/ from .gen/ (as `genjob push` would): this
 * clone's own material and check records for its gate, which reads refs only.
 */
async function recordMaterial(store: Store, key: string): Promise<void> {
  const { readMaterial, readPushable } = await import('../git/local-material.js');
  const { buildMaterial } = await import('../git/build-material.js');
  const p = readPushable(store, { key, state: 'applied' });
  if (p !== undefined) await buildMaterial(store.root, [readMaterial(store, p)]);
  await (await import('../check/check-refs.js')).recordCheckRefs(store, [key]);
}

export interface AppliedCommit {
  result: Record<string, unknown>;
  lines: string[];
}

/**
 * `apply --commit` of an applied key. `committedIn`: the commit already carrying its Genjob-Key, if any.
 * An output changed in the tree since the apply is EGJ_STALE (nothing committed); with `skipChanged`
 * (--all, where old applied jobs edited by people later are common) it is a line, not a failure.
 */
export async function commitApplied(
  store: Store,
  key: string,
  policy: ReceiptTrustPolicy,
  o: {
    committedIn?: string;
    requireSandbox?: boolean;
    skipChanged: boolean;
    /** The --require-check gate: the records to name, or a refusal. */
    gate?: () => Promise<CheckTrailer[]>;
  },
): Promise<AppliedCommit> {
  const short = key.slice(0, 12);
  if (o.committedIn !== undefined)
    return {
      result: { key, status: 'already-applied', commit: o.committedIn, committedBefore: true },
      lines: [`${short} already applied and committed in ${o.committedIn.slice(0, 12)}`],
    };
  const v = await verifyKey(store, key, policy);
  if (o.requireSandbox) requireSandbox(v.receipt, store.layout.receipt(key));
  for (const out of v.receipt.outputs) {
    const now = currentFile(store, out.path).sha256;
    if (now === out.sha256) continue;
    const err = staleError(
      out.path,
      out.sha256,
      now,
      `job ${short} was applied without --commit and this output changed since; nothing was committed`,
    );
    if (!o.skipChanged) throw err;
    return {
      result: { key, status: 'already-applied', commit: null, code: err.code, message: err.message },
      lines: [`${short} already applied; not committed: ${err.message}`],
    };
  }
  await assertHeadHoldsInputs(store, v.job, 'nothing was committed');
  const c = await commitVerified(store, v, (await o.gate?.()) ?? []);
  return {
    result: { key, status: 'already-applied', commit: c.commit ?? null },
    lines: [`${short} already applied, without its commit:`, c.line],
  };
}
