// What `genjob push` publishes, read from .gen/: for every received or applied key with a receipt, the
// job file's bytes, the receipt's exact bytes (envelope included) and each output's bytes (out/<key>/ or,
// when out/ holds only a manifest, objects/<sha256>), each output checked against the receipt's digest.
// No schema code: push only copies (pull and verify check); receipts are hashed so unchanged keys are never read again.
import { join } from 'node:path';
import { canonicalJson } from '../core/canonical-json.js';
import { RejectedError } from '../core/errors.js';
import { pathProblem } from '../core/paths.js';
import { splitEnvelope } from '../core/receipt-peek.js';
import { SHA256_HEX, sha256Hex } from '../core/sha256.js';
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

export interface PushableKey {
  key: string;
  state: 'received' | 'applied';
}

/** Received and applied keys, sorted, without reading anything of them; `only` limits them to those keys. */
export function listPushableKeys(store: Store, only?: readonly string[]): PushableKey[] {
  const states = new Map<string, 'received' | 'applied'>();
  for (const key of keysIn(store, 'received')) states.set(key, 'received');
  for (const key of keysIn(store, 'applied')) states.set(key, 'applied');
  const keys = only ?? [...states.keys()].sort();
  return keys.flatMap((key) => {
    const state = states.get(key);
    return state === undefined ? [] : [{ key, state }];
  });
}

/** The key with its receipt's bytes and digest, or undefined when it holds no receipt. */
export function readPushable(store: Store, k: PushableKey): Pushable | undefined {
  const receipt = readIfExists(store, store.layout.receipt(k.key));
  return receipt === undefined ? undefined : { ...k, receipt, receiptSha256: sha256Hex(receipt) };
}

/** The outputs a receipt names, read without the schema code (push only copies; pull and verify check). */
function namedOutputs(bytes: Buffer, file: string): Array<{ path: string; sha256: string }> {
  let outputs: unknown;
  try {
    outputs = splitEnvelope(JSON.parse(bytes.toString('utf8')) as Record<string, unknown>).payload.outputs;
  } catch (err) {
    throw new RejectedError(
      'EGJ_RECEIPT_SCHEMA',
      `${file}: not a readable receipt (${(err as Error).message})`,
      file,
    );
  }
  const list = Array.isArray(outputs) ? outputs : [];
  return list.map((o: { path?: unknown; sha256?: unknown }) => {
    const problem = pathProblem(o?.path);
    if (problem || typeof o.sha256 !== 'string' || !SHA256_HEX.test(o.sha256))
      throw new RejectedError(
        'EGJ_PATH_FORM',
        `${file}: output ${JSON.stringify(o?.path)}: ${problem ?? 'no sha256'}`,
        file,
      );
    return { path: o.path as string, sha256: o.sha256 };
  });
}

/** The job file's bytes: received/<key>.json, or the job an apply record embeds, in job-file form. */
function jobBytes(store: Store, p: Pushable): Buffer | undefined {
  if (p.state === 'received') return readIfExists(store, store.layout.jobFile('received', p.key));
  const file = store.layout.jobFile('applied', p.key);
  const record = readIfExists(store, file);
  if (record === undefined) return undefined;
  let doc: { key?: unknown; job?: unknown } | null;
  try {
    doc = JSON.parse(record.toString('utf8')) as typeof doc;
  } catch (err) {
    // torn, or written by hand: push names it instead of failing without a word
    throw new RejectedError(
      'EGJ_PUSH_INCOMPLETE',
      `${file}: not a readable apply record (${(err as Error).message})`,
      file,
    );
  }
  return doc?.key === p.key && typeof doc.job === 'object' && doc.job !== null
    ? Buffer.from(`${canonicalJson(doc.job)}\n`)
    : undefined;
}

/** The full material of one pushable key. Throws RejectedError when an output's bytes are missing or drifted. */
export function readMaterial(store: Store, p: Pushable): Material {
  const receiptFile = store.layout.receipt(p.key);
  const job = jobBytes(store, p);
  if (job === undefined)
    throw new RejectedError('EGJ_PUSH_INCOMPLETE', `${p.key.slice(0, 12)}: the job file is gone`);
  const outputs: Material['outputs'] = [];
  for (const o of namedOutputs(p.receipt, receiptFile)) {
    const file = join(store.layout.outDir(p.key), ...o.path.split('/'));
    const bytes = readIfExists(store, file) ?? readIfExists(store, store.layout.object(o.sha256));
    if (bytes === undefined)
      throw new RejectedError(
        'EGJ_PUSH_INCOMPLETE',
        `${file}: output named by the receipt is missing; nothing was pushed`,
        file,
      );
    if (sha256Hex(bytes) !== o.sha256)
      throw new RejectedError(
        'EGJ_ARTIFACT_DRIFT',
        `${file}: bytes do not hash to the receipt's ${o.sha256.slice(0, 12)}; nothing was pushed`,
        file,
      );
    outputs.push({ path: o.path, bytes });
  }
  return { key: p.key, job, receipt: p.receipt, receiptSha256: p.receiptSha256, outputs };
}
