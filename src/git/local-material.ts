// What `genjob push` publishes, read from .gen/: for every received or applied key with a receipt, the
// job file's bytes, the receipt's exact bytes (envelope included) and each output's bytes (out/<key>/ or,
// when out/ holds only a manifest, objects/<sha256>), each output checked against the receipt's digest.
// listPushable is cheap (no schema code): it hashes receipts so unchanged keys are never read again.
import { join } from 'node:path';
import { RejectedError } from '../core/errors.js';
import { pathProblem } from '../core/paths.js';
import { sha256Hex } from '../core/sha256.js';
import { readIfExists } from '../store/durable.js';
import { keysIn } from '../store/job-states.js';
import type { Store } from '../store/store.js';

export interface Pushable {
  key: string;
  state: 'received' | 'applied';
  receipt: Buffer;
  receiptSha256: string;
}

export interface Material {
  key: string;
  job: Buffer;
  receipt: Buffer;
  receiptSha256: string;
  outputs: Array<{ path: string; bytes: Buffer }>;
}

/** Received and applied keys that hold a receipt, sorted; `only` limits them to those keys. */
export function listPushable(store: Store, only?: readonly string[]): Pushable[] {
  const states = new Map<string, 'received' | 'applied'>();
  for (const key of keysIn(store, 'received')) states.set(key, 'received');
  for (const key of keysIn(store, 'applied')) states.set(key, 'applied');
  const keys = only ?? [...states.keys()].sort();
  const out: Pushable[] = [];
  for (const key of keys) {
    const state = states.get(key);
    if (state === undefined) continue;
    const receipt = readIfExists(store, store.layout.receipt(key));
    if (receipt === undefined) continue;
    out.push({ key, state, receipt, receiptSha256: sha256Hex(receipt) });
  }
  return out;
}

/** The full material of one pushable key. Throws RejectedError when an output's bytes are missing or drifted. */
export async function readMaterial(store: Store, p: Pushable): Promise<Material> {
  const { readApplied } = await import('../apply/apply-records.js');
  const { jobFileBytes } = await import('../store/mint-job.js');
  const { decodeReceipt } = await import('../core/receipt-decode.js');
  const receiptFile = store.layout.receipt(p.key);
  let job: Buffer | undefined;
  if (p.state === 'applied') {
    const record = readApplied(store, p.key);
    job = record === undefined ? undefined : jobFileBytes(record.job);
  } else job = readIfExists(store, store.layout.jobFile('received', p.key));
  if (job === undefined)
    throw new RejectedError('EGJ_PUSH_INCOMPLETE', `${p.key.slice(0, 12)}: the job file is gone`);
  const receipt = decodeReceipt(p.receipt, receiptFile);
  const outputs: Material['outputs'] = [];
  for (const o of receipt.outputs) {
    const problem = pathProblem(o.path);
    if (problem)
      throw new RejectedError(
        'EGJ_PATH_FORM',
        `${receiptFile}: output ${JSON.stringify(o.path)}: ${problem}`,
        receiptFile,
      );
    const file = join(store.layout.outDir(p.key), ...o.path.split('/'));
    const bytes = readIfExists(store, file) ?? readIfExists(store, store.layout.object(o.sha256));
    if (bytes === undefined)
      throw new RejectedError(
        'EGJ_PUSH_INCOMPLETE',
        `${file}: output named by the receipt is missing; nothing of this key was pushed`,
        file,
      );
    if (sha256Hex(bytes) !== o.sha256)
      throw new RejectedError(
        'EGJ_ARTIFACT_DRIFT',
        `${file}: bytes do not hash to the receipt's ${o.sha256.slice(0, 12)}; nothing of this key was pushed`,
        file,
      );
    outputs.push({ path: o.path, bytes });
  }
  return { key: p.key, job, receipt: p.receipt, receiptSha256: p.receiptSha256, outputs };
}
