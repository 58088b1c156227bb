// Turn one job's batch answer into its receipt and outputs through the path of an interactive answer:
// the job's inputs (checked against their digests) in a fresh workspace under .gen/staging, the answer
// read by generate() with the built-in step replaced by the batch line, the workspace diffed against
// the job, and the receipt committed by commitResult (epoch and lease checked under the key lock).
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { errnoOf } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { LIVE_PLANE } from '../core/plane.js';
import { RECEIPT_SCHEMA, type Receipt } from '../core/receipt.js';
import { peekEpoch } from '../core/receipt-peek.js';
import { sha256Hex } from '../core/sha256.js';
import { type BuiltinOutcome, generate } from '../remote/generate.js';
import { type AnswerTarget, OPENAI_GENERATOR_NAME } from '../remote/generators/openai-answer.js';
import type { SandboxPolicy } from '../sandbox/policy.js';
import { currentEpoch } from '../store/attempts.js';
import type { BatchJobEntry } from '../store/batch-outbox.js';
import { INPUT_CHANGED, inputChangedReason } from '../store/dead-jobs.js';
import { exists, moveState, readIfExists } from '../store/durable.js';
import { journal } from '../store/journal.js';
import { withKeyLock } from '../store/key-lock.js';
import { readLease, removeLease } from '../store/lease.js';
import type { Store } from '../store/store.js';
import type { BatchContext } from './batch-context.js';
import { commitResult } from './commit-result.js';
import { release } from './release-job.js';
import type { JobOutcome } from './work-one.js';

const NO_COMMAND: SandboxPolicy = {
  kind: 'none',
  network: true,
  envNames: [],
  binds: [],
  bindsRw: [],
  hidden: [],
};

/** Whether the job is still this entry's: running, under the entry's epoch, with its lease. */
export function stillOurs(store: Store, e: BatchJobEntry): boolean {
  return (
    exists(store, store.layout.jobFile('running', e.key)) &&
    currentEpoch(store, e.key) === e.epoch &&
    readLease(store, e.key)?.epoch === e.epoch
  );
}

/** A crash after the receipt of this epoch landed, before the job moved: finish the move. */
export async function finishLanded(store: Store, e: BatchJobEntry): Promise<boolean> {
  const receipt = readIfExists(store, store.layout.receipt(e.key));
  if (receipt === undefined || peekEpoch(receipt) !== e.epoch || !exists(store, store.layout.outDir(e.key)))
    return false;
  await withKeyLock(store, e.key, () => {
    try {
      moveState(store, store.layout.jobFile('running', e.key), store.layout.jobFile('received', e.key));
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
    removeLease(store, e.key, e.epoch);
  });
  journal(store, {
    event: 'recovered',
    key: e.key,
    epoch: e.epoch,
    reason: 'batch receipt had landed before a crash',
  });
  return true;
}

/**
 * Commit `answer` (run against the job's workspace) as the receipt of (key, epoch). A job whose inputs
 * changed since mint is dead-lettered as stale, as an interactive attempt would be before shipping.
 */
export async function commitAnswer(
  ctx: BatchContext,
  job: Job,
  e: BatchJobEntry,
  batchId: string | null,
  rawAnswerDir: string,
  answer: (target: AnswerTarget) => BuiltinOutcome,
): Promise<JobOutcome> {
  const { store } = ctx;
  const { key } = job;
  const scratch = mkdtempSync(join(store.layout.staging, 'batch-'));
  try {
    const ws = join(scratch, 'ws');
    const changed = copyInputs(store.root, job, ws);
    if (changed !== null) {
      const reason = inputChangedReason(changed, key);
      if (!(await release(store, key, e.epoch, 'dead', { code: INPUT_CHANGED, reason })))
        return { key, outcome: 'superseded', reason: `lease of epoch ${e.epoch} was lost` };
      return { key, outcome: 'dead', reason };
    }
    mkdirSync(rawAnswerDir, { recursive: true });
    const built = join(scratch, 'built');
    const result = await generate({
      job,
      jobDigest: e.job_digest,
      generator: OPENAI_GENERATOR_NAME,
      ws,
      scratch,
      built,
      timeoutMs: ctx.timeoutMs,
      policy: NO_COMMAND, // no generator command runs: the answer is the batch's line
      builtin: async () => answer({ workspace: ws, job, rawAnswerDir }),
    });
    const receipt: Receipt = {
      schema: RECEIPT_SCHEMA,
      key,
      job_digest: e.job_digest,
      epoch: e.epoch,
      status: result.status,
      outputs: result.outputs,
      reason: result.reason,
      worker: { id: ctx.worker.id, host: hostname() },
      generator: result.generator,
      timings: result.timings,
      cached: false,
      ...(result.usage ? { usage: result.usage } : {}),
      ...(result.sandbox ? { sandbox: result.sandbox } : {}),
      plane: LIVE_PLANE, // batches run on the live plane only
      ...(batchId !== null ? { batch: batchId } : {}),
    };
    const committed = await commitResult(
      store,
      key,
      e.epoch,
      ctx.encodeReceipt(receipt),
      join(built, 'files'),
    );
    if (!committed.committed) return { key, outcome: 'superseded', reason: committed.reason };
    return {
      key,
      outcome: 'received',
      epoch: e.epoch,
      status: receipt.status,
      cached: false,
      reason: receipt.reason,
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Copy the job's inputs and reads from the repository into `ws`; the path of the first that changed, or null. */
function copyInputs(root: string, job: Job, ws: string): string | null {
  mkdirSync(ws, { recursive: true });
  for (const input of [...job.inputs, ...(job.reads ?? [])]) {
    const bytes = readNoFollow(join(root, input.path));
    const digest = bytes === null ? null : sha256Hex(bytes);
    if (digest !== input.sha256) return input.path;
    mkdirSync(dirname(join(ws, input.path)), { recursive: true });
    if (bytes !== null) writeFileSync(join(ws, input.path), bytes, { flag: 'wx', mode: 0o644 });
  }
  return null;
}

function readNoFollow(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    if (code === 'ELOOP') return Buffer.from('\0symlink'); // never a minted digest: refused as changed
    throw err;
  }
  try {
    if (!fstatSync(fd).isFile()) return Buffer.from('\0not a file');
    const chunks: Buffer[] = [];
    for (;;) {
      const buf = Buffer.alloc(64 * 1024);
      const got = readSync(fd, buf, 0, buf.length, null);
      if (got === 0) return Buffer.concat(chunks);
      chunks.push(buf.subarray(0, got));
    }
  } finally {
    closeSync(fd);
  }
}
