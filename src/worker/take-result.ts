// Take a host's answer apart as hostile input: decode the receipt (trust policy applied), check it
// names this job and this epoch, extract the archive safely into staging, and check the files are
// exactly the receipt's outputs — then commit. Any failure keeps the raw receipt in dead/ and
// gives the job back; a lease lost meanwhile means standing down without committing.
import { GenjobError, IoError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { LIVE_PLANE, planeOf } from '../core/plane.js';
import type { Receipt } from '../core/receipt.js';
import { deadLetterBytes } from '../store/dead-letter.js';
import { recordInDoubt } from '../store/in-doubt.js';
import { commitResult } from './commit-result.js';
import { extractAnswer } from './extract-answer.js';
import { requeue } from './release-job.js';
import type { Answer, ServeClient } from './serve-client.js';
import { type JobOutcome, REQUEST_MARGIN_MS, type WorkContext } from './work-one.js';

export async function takeResult(
  ctx: WorkContext,
  session: ServeClient,
  job: Job,
  digest: string,
  epoch: number,
  answer: Extract<Answer, { type: 'result' }>,
  isLost: () => boolean,
): Promise<JobOutcome> {
  const { store } = ctx;
  const { key } = job;
  const rejectAnswer = (code: string, reason: string): Promise<JobOutcome> => {
    deadLetterBytes(store, `${key}.receipt.e${epoch}`, answer.receiptBytes, { key, code, reason, epoch });
    // the answer broke off mid-way: the host holds the result, so ask it again first
    if (code === 'EGJ_IN_DOUBT') recordInDoubt(store, key, epoch, ctx.launcher.destination);
    return requeue(store, key, epoch, reason, code, { destination: ctx.launcher.destination });
  };
  let receipt: Receipt;
  try {
    receipt = ctx.decodeReceipt(answer.receiptBytes, `receipt from ${ctx.launcher.destination}`);
  } catch (err) {
    ctx.dropSession(); // its body is still in the pipe
    if (!(err instanceof GenjobError)) throw err;
    return rejectAnswer(err.code, err.message);
  }
  if (receipt.key !== key || receipt.job_digest !== digest || receipt.epoch !== epoch) {
    ctx.dropSession();
    return rejectAnswer(
      'EGJ_RECEIPT_MISMATCH',
      `the host answered with a receipt for another job or epoch (key ${receipt.key.slice(0, 12)}, epoch ${receipt.epoch})`,
    );
  }
  if (planeOf(receipt) !== LIVE_PLANE) {
    ctx.dropSession();
    return rejectAnswer(
      'EGJ_SHADOW',
      `the host answered a live request with a receipt of plane ${planeOf(receipt)}`,
    );
  }
  let staged: Awaited<ReturnType<typeof extractAnswer>>;
  try {
    staged = await session.deadline(ctx.timeoutMs + REQUEST_MARGIN_MS, () =>
      extractAnswer(answer.tar, job, store.layout.staging),
    );
  } catch (err) {
    ctx.dropSession();
    // our own disk failing is not the host's fault: the job is given back (work-one.ts), not its answer refused
    if (!(err instanceof GenjobError) || err instanceof IoError) throw err;
    return rejectAnswer(err.code, `result archive refused: ${err.message}`);
  }
  const mismatch = compareFiles(receipt, staged.files);
  if (mismatch) {
    store.fs.rmSync(staged.dir, { recursive: true, force: true });
    return rejectAnswer('EGJ_RESULT_MISMATCH', mismatch);
  }
  if (isLost()) {
    store.fs.rmSync(staged.dir, { recursive: true, force: true });
    const reason = `lease of epoch ${epoch} was lost while the job ran; standing down`;
    deadLetterBytes(store, `${key}.receipt.e${epoch}`, answer.receiptBytes, {
      key,
      code: 'EGJ_EPOCH_SUPERSEDED',
      reason,
      epoch,
    });
    return { key, outcome: 'superseded', reason };
  }
  const committed = await commitResult(store, key, epoch, answer.receiptBytes, staged.dir, {
    destination: ctx.launcher.destination,
  }).catch((err) => {
    try {
      store.fs.rmSync(staged.dir, { recursive: true, force: true }); // moved to out/ already, or not: never left
    } catch {
      // the staging sweep of the next work removes it
    }
    throw err;
  });
  if (!committed.committed) return { key, outcome: 'superseded', reason: committed.reason };
  return {
    key,
    outcome: 'received',
    epoch,
    status: receipt.status,
    cached: receipt.cached,
    reason: receipt.reason,
  };
}

/** Why the extracted files are not exactly the receipt's outputs, or null. */
export function compareFiles(
  receipt: Receipt,
  files: ReadonlyArray<{ path: string; sha256: string; bytes: number }>,
): string | null {
  const got = new Map(files.map((f) => [f.path, f]));
  for (const o of receipt.outputs) {
    const f = got.get(o.path);
    if (!f) return `the receipt names ${JSON.stringify(o.path)} but the result has no such file`;
    if (f.sha256 !== o.sha256 || f.bytes !== o.bytes)
      return `${JSON.stringify(o.path)}: bytes do not hash to the receipt's digest`;
    got.delete(o.path);
  }
  const extra = [...got.keys()][0];
  return extra === undefined
    ? null
    : `the result has ${JSON.stringify(extra)}, which the receipt does not name`;
}
