// The verification material the merge gate judges a generated commit by, read only from git objects:
// refs/genjob/keys/<key> (built by this clone: `push`, `apply --commit`) and refs/genjob-pulled/keys/<key>
// (fetched by `pull`). Never from .gen/: a checkout of the branch under review can write files there,
// never refs. Each ref's tree is checked as pull checks it (read-material.ts), then the receipt against
// the job, the trust policy and the output bytes (verify rules 1 to 5), all in memory.
import { RejectedError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { parseJob } from '../core/job-schema.js';
import { peekPlane, planeOf, refuseShadow } from '../core/plane.js';
import type { Receipt } from '../core/receipt.js';
import { decodeReceiptWithPolicy } from '../core/receipt-decode.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { sha256Hex } from '../core/sha256.js';
import { checkReceipt } from '../core/verify-rules.js';
import { JOB_ENTRY, KEY_REFS, OUT_DIR, PULLED_REFS, RECEIPT_ENTRY } from './material-refs.js';
import {
  listKeyRefs,
  type PulledMaterial,
  type PulledRef,
  type ReadOutcome,
  readPulled,
} from './read-material.js';

/** Where the gate looks for a key's material, in this order: this clone's own, then what pull fetched. */
export const MATERIAL_SOURCES: ReadonlyArray<{ under: string; keys: string }> = [
  { under: KEY_REFS, keys: KEY_REFS },
  { under: PULLED_REFS, keys: PULLED_REFS },
];

/** key → each ref's material (or why it cannot be used), this clone's own first. */
export async function loadKeyMaterial(
  root: string,
  keys: ReadonlySet<string>,
): Promise<Map<string, ReadOutcome[]>> {
  const refs: Array<PulledRef & { key: string }> = [];
  for (const s of MATERIAL_SOURCES)
    for (const r of await listKeyRefs(root, s.under, s.keys))
      if (r.key !== null && keys.has(r.key)) refs.push(r as PulledRef & { key: string });
  const byKey = new Map<string, ReadOutcome[]>();
  for (const o of await readPulled(root, refs)) {
    const key = o.ok ? o.material.key : o.key;
    byKey.set(key, [...(byKey.get(key) ?? []), o]);
  }
  return byKey;
}

export interface JudgedMaterial {
  job: Job;
  receipt: Receipt;
  receiptSha256: string;
  signer: string | null;
}

/**
 * Verify rules 1 to 5 on one ref's material: the receipt decodes under the policy (signature included)
 * and is live, matches the job (no epoch fencing: that is the worker's, when it committed the receipt),
 * and the outputs under out/ are exactly the receipt's, byte for byte. Throws the rule's RejectedError.
 */
export function judgeMaterial(m: PulledMaterial, policy: ReceiptTrustPolicy): JudgedMaterial {
  const file = `${m.ref}:${RECEIPT_ENTRY}`;
  refuseShadow(peekPlane(m.receipt), file);
  const { receipt, signer } = decodeReceiptWithPolicy(m.receipt, file, policy);
  refuseShadow(planeOf(receipt), file);
  const { job, digest } = parseJob(m.job, `${m.ref}:${JOB_ENTRY}`);
  checkReceipt(job, digest, receipt, 0, file);
  const got = new Map(m.outputs.map((o) => [o.path, o.bytes]));
  for (const o of receipt.outputs) {
    const at = `${m.ref}:${OUT_DIR}${o.path}`;
    const bytes = got.get(o.path);
    if (bytes === undefined)
      throw new RejectedError(
        'EGJ_ARTIFACT_MISSING',
        `${at}: the receipt names this output but it is missing`,
        at,
      );
    const sha = sha256Hex(bytes);
    if (sha !== o.sha256 || bytes.length !== o.bytes)
      throw new RejectedError(
        'EGJ_ARTIFACT_DRIFT',
        `${at}: bytes hash to ${sha.slice(0, 12)}, receipt says ${o.sha256.slice(0, 12)}`,
        at,
      );
    got.delete(o.path);
  }
  for (const path of got.keys()) {
    const at = `${m.ref}:${OUT_DIR}${path}`;
    throw new RejectedError('EGJ_ARTIFACT_EXTRA', `${at}: artifact the receipt does not name`, at);
  }
  return { job, receipt, receiptSha256: sha256Hex(m.receipt), signer };
}
