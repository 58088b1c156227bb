// Verify one key from what is on disk: the job (received/, applied/ or reverted/), its receipt (decoded
// under the trust policy), and rule 4 — out/<key>/ holds exactly the receipt's outputs, each a
// regular file whose bytes hash to the named digest. Returns what apply needs; writes nothing.
import type { Dirent } from 'node:fs';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { errnoOf, IoError, RejectedError, UsageError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { payloadPlane, planeOf, refuseShadow } from '../core/plane.js';
import type { Receipt } from '../core/receipt.js';
import { decodeReceiptWithPolicy } from '../core/receipt-decode.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { type PeekedReceipt, peekReceipt } from '../core/receipt-peek.js';
import { sha256Hex } from '../core/sha256.js';
import { checkReceipt } from '../core/verify-rules.js';
import { currentEpoch } from '../store/attempts.js';
import { readRecord } from '../store/durable.js';
import { hashSmallFileSync, SMALL_FILE_BYTES } from '../store/hash-file.js';
import { hashFiles } from '../store/hash-files.js';
import { parseJobFile } from '../store/job-files.js';
import { findJob } from '../store/job-states.js';
import type { JobState } from '../store/layout.js';
import type { Store } from '../store/store.js';
import { prunedOn, prunedState, readTombstone, tombstoneFile } from '../store/tombstone.js';

export interface Verified {
  job: Job;
  jobDigest: string;
  receipt: Receipt;
  receiptSha256: string;
  signer: string | null;
  state: 'received' | 'applied' | 'reverted';
}

/**
 * `hint`: the state the caller just found the key in (the run gate lists every state once), so its file
 * is read first instead of looking in every state; a key that moved meanwhile is looked up as usual.
 * `receipt`: the receipt file as the caller just read and peeked it (the run gate reads it for its status
 * and digest), verified as it is instead of read again: the bytes checked are the bytes it records.
 */
export async function verifyKey(
  store: Store,
  key: string,
  policy: ReceiptTrustPolicy,
  hint?: JobState,
  receipt?: PeekedReceipt,
): Promise<Verified> {
  const hintFile = hint === undefined ? undefined : store.layout.jobFile(hint, key);
  const hinted = hintFile === undefined ? undefined : readRecord(store, hintFile);
  const found =
    hint !== undefined && hintFile !== undefined && hinted !== undefined
      ? { state: hint, file: hintFile, bytes: hinted }
      : findJob(store, key);
  if (!found) {
    // a key gc pruned is known by its tombstone: what became of it, not "unknown" and "until work stores it"
    const tomb = readTombstone(store, key);
    if (tomb)
      throw new UsageError(
        'EGJ_PRUNED',
        `${tombstoneFile(store, key)}: key ${key.slice(0, 12)} was ${prunedState(tomb)}: its receipt and outputs are gone, nothing to verify${tomb.state === 'applied' ? '' : ' (mint the same work order to generate it afresh)'}`,
      );
  }
  if (!found || (found.state !== 'received' && found.state !== 'applied' && found.state !== 'reverted')) {
    throw new UsageError(
      'EGJ_NOT_RECEIVED',
      `${key.slice(0, 12)}: job is ${found ? `still in ${found.state}/` : 'unknown'}; nothing to verify until work has stored its receipt`,
    );
  }
  // gc writes an applied key's tombstone before it removes its material: one it was interrupted in is
  // pruned, not damaged (the next `genjob gc` finishes it)
  const tomb = found.state === 'applied' ? readTombstone(store, key) : undefined;
  if (tomb?.state === 'applied')
    throw new UsageError(
      'EGJ_PRUNED',
      `${tombstoneFile(store, key)}: key ${key.slice(0, 12)} was applied and genjob gc began pruning its material on ${prunedOn(tomb)}; nothing to verify (run genjob gc to finish)`,
    );
  // the bytes found are the job: parsed as they are, not read a second time
  const { job, digest } = parseJobFile(found.state, found.file, found.bytes);
  const receiptFile = store.layout.receipt(key);
  const peeked = receipt ?? readPeeked(store, receiptFile);
  if (peeked === undefined)
    throw new RejectedError('EGJ_RECEIPT_MISSING', `${receiptFile}: no receipt for this job`, receiptFile);
  const bytes = peeked.bytes;
  // a shadow plane's receipt is refused before anything else, whatever else is wrong with it
  refuseShadow(payloadPlane(peeked.payload), receiptFile);
  const { receipt: decoded, signer } = decodeReceiptWithPolicy(bytes, receiptFile, policy);
  refuseShadow(planeOf(decoded), receiptFile);
  checkReceipt(job, digest, decoded, currentEpoch(store, key), receiptFile);
  await checkArtifacts(store.layout.outDir(key), decoded);
  return {
    job,
    jobDigest: digest,
    receipt: decoded,
    receiptSha256: sha256Hex(bytes),
    signer,
    state: found.state,
  };
}

function readPeeked(store: Store, file: string): PeekedReceipt | undefined {
  const bytes = readRecord(store, file);
  return bytes === undefined ? undefined : peekReceipt(bytes);
}

/** Rule 4: the artifact directory holds exactly the outputs, as regular files with the named bytes. */
async function checkArtifacts(outDir: string, receipt: Receipt): Promise<void> {
  const expected = new Map(receipt.outputs.map((o) => [o.path, o]));
  const found = new Set<string>();
  // listed synchronously: one small directory per job, and a run gate verifies thousands in a row
  function walk(rel: string): void {
    let entries: Dirent[];
    try {
      entries = readdirSync(rel ? join(outDir, rel) : outDir, { withFileTypes: true });
    } catch (err) {
      if (errnoOf(err) === 'ENOENT' && rel === '') return;
      throw IoError.wrap('readdir', rel ? join(outDir, rel) : outDir, err);
    }
    // a file's full path is built only to name it in an error (path joins were a visible share of a gate)
    for (const d of entries) {
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(path);
      else if (!d.isFile()) {
        const file = join(outDir, path);
        throw new RejectedError(
          'EGJ_ARTIFACT_NOT_REGULAR',
          `${file}: not a regular file (symlinks and devices are never applied)`,
          file,
        );
      } else if (!expected.has(path)) {
        const file = join(outDir, path);
        throw new RejectedError('EGJ_ARTIFACT_EXTRA', `${file}: artifact the receipt does not name`, file);
      } else found.add(path);
    }
  }
  walk('');
  for (const o of receipt.outputs) {
    if (found.has(o.path)) continue;
    const file = join(outDir, o.path);
    throw new RejectedError(
      'EGJ_ARTIFACT_MISSING',
      `${file}: the receipt names this output but it is missing`,
      file,
    );
  }
  // small outputs (the usual case) are hashed in place; big ones go to hashFiles, which may use threads.
  // The size the receipt claims only saves the read that would return 0: a file of any other size is
  // read to its end and hashed whole, so it still fails below
  const big = receipt.outputs.filter((o) => o.bytes > SMALL_FILE_BYTES);
  const bigDigests = big.length === 0 ? [] : await hashFiles(big.map((o) => join(outDir, o.path)));
  let nextBig = 0;
  const digests = receipt.outputs.map((o) =>
    o.bytes > SMALL_FILE_BYTES
      ? bigDigests[nextBig++]!
      : hashSmallFileSync(join(outDir, o.path), undefined, o.bytes),
  );
  for (const [i, o] of receipt.outputs.entries()) {
    const { sha256, bytes } = digests[i]!;
    if (sha256 !== o.sha256 || bytes !== o.bytes) {
      const file = join(outDir, o.path);
      throw new RejectedError(
        'EGJ_ARTIFACT_DRIFT',
        `${file}: bytes hash to ${sha256.slice(0, 12)}, receipt says ${o.sha256.slice(0, 12)}`,
        file,
      );
    }
  }
}

/**
 * What apply finishes an interrupted apply of `key` against: a verification of the key now (the job, the
 * receipt under `policy`, out/), as any apply makes one.
 */
export async function applyBacking(
  store: Store,
  key: string,
  policy: ReceiptTrustPolicy,
): Promise<{ jobDigest: string; receiptSha256: string; outputs: Receipt['outputs']; receipt: Receipt }> {
  const v = await verifyKey(store, key, policy);
  return {
    jobDigest: v.jobDigest,
    receiptSha256: v.receiptSha256,
    outputs: v.receipt.outputs,
    receipt: v.receipt,
  };
}
