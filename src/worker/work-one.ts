// Work one claimed job: attempt (epoch + lease + heartbeat) → ship the bundle → take the answer
// apart as hostile input → commit. Every way out leaves the job in exactly one state:
// received/ (with its receipt), back in queue/ (in doubt, journalled), or dead/ (with the reason).
import { HostDownError, SandboxUnavailableError, UsageError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import type { Receipt } from '../core/receipt.js';
import { type LeaseRecord, markUnspent, type Worker } from '../store/attempts.js';
import { wasCancelled } from '../store/cancel-job.js';
import { CANCELLED, deadAdvice, INPUT_CHANGED } from '../store/dead-jobs.js';
import { deadLetterBytes } from '../store/dead-letter.js';
import { recordInDoubt } from '../store/in-doubt.js';
import { journal } from '../store/journal.js';
import { beat } from '../store/lease.js';
import { readPromotion } from '../store/promotion.js';
import { markRegenerated, regenerateRequested } from '../store/retry-job.js';
import type { Store } from '../store/store.js';
import { InputChangedError, InputNotRegularError } from '../transport/archive-errors.js';
import type { ServeLauncher } from '../transport/launcher.js';
import { bundleSha256 } from '../transport/tar-pack.js';
import { startAttempt } from './admit-job.js';
import { freshGeneration } from './fresh-generation.js';
import { giveBack, release, requeue } from './release-job.js';
import { type Answer, InDoubtError, type ServeClient } from './serve-client.js';
import { streamBundle } from './spool-bundle.js';
import { takeResult } from './take-result.js';

export interface WorkContext {
  store: Store;
  worker: Worker;
  launcher: ServeLauncher;
  /** The session this slot uses; reopened when it died, or when `pin` asks for other serve flags. */
  session: (pin?: SessionPin) => Promise<ServeClient>;
  dropSession: () => void;
  /** Ask the host to stop the request in flight (the job was cancelled); falls back to dropSession. */
  cancelSession?: () => void;
  generator: string | null;
  timeoutMs: number;
  /** Ask the host to generate again rather than answer with a cached aborted result. */
  retryAborted?: boolean;
  leaseTtlS: number;
  maxAttempts: number;
  decodeReceipt: (bytes: Buffer, file: string) => Receipt;
  /** The user's secret: a promotion pin is followed only when sealed under it (null: none is followed). */
  userSecret: Buffer | null;
  /** A line for the user about a job (a promotion pin not followed). */
  notice?: (line: string) => void;
  /** True when the session was cut by the end of the shutdown grace period (the attempt is not spent). */
  wasCut?: () => boolean;
  /** The host misbehaved before a bundle reached its generator (a broken session, a refusal). */
  hostTrouble?: (reason: string) => void;
}

/** A promoted job's own way to run: its pinned generator, checked on the host, and serve's sandbox flags. */
export interface SessionPin {
  generator: string;
  args: readonly string[];
}

/** Refusals a host gives before it reads a bundle: no generator ran, so no attempt is spent. */
const REFUSED_BEFORE_GENERATING = new Set([
  'EGJ_NO_GENERATOR',
  'EGJ_GENERATOR_PINNED',
  'EGJ_GENERATOR_CONFIG',
  'EGJ_BAD_REQUEST',
]);

export type JobOutcome =
  | {
      key: string;
      outcome: 'received';
      epoch: number;
      status: Receipt['status'];
      cached: boolean;
      reason: string | null;
    }
  | { key: string; outcome: 'recovered' }
  | { key: string; outcome: 'dead'; reason: string }
  | { key: string; outcome: 'requeued'; reason: string; attempt_spent?: boolean }
  | { key: string; outcome: 'superseded'; reason: string };

/** Extra time a request may take beyond the generator's own timeout (transfer, host start-up). */
export const REQUEST_MARGIN_MS = 120_000;

/**
 * Work the job this worker just claimed. Whatever error ends it, the job is given back first (giveBack:
 * to queue/ at once, journalled) and the error's message says so; then the error goes on up.
 */
export async function workOne(ctx: WorkContext, key: string): Promise<JobOutcome> {
  const attempt: { epoch?: number } = {};
  try {
    return await workClaimed(ctx, key, attempt);
  } catch (err) {
    // a configuration error (a changed host key, say) stops the run before anything is generated
    const note = await giveBack(ctx.store, key, err, {
      ...attempt,
      spendAttempt: !(err instanceof UsageError),
    });
    if (err instanceof Error) err.message = `${err.message}; ${note}`;
    throw err;
  }
}

async function workClaimed(ctx: WorkContext, key: string, started: { epoch?: number }): Promise<JobOutcome> {
  const { store } = ctx;
  const begun = startAttempt(store, key, ctx, ctx.launcher.destination, started);
  if ('outcome' in begun) return begun;
  const { job, digest, lease } = begun;
  const standing: Standing = { lost: false, cancelled: false };
  const heartbeat = setInterval(
    () => {
      try {
        if (standing.lost || beat(store, key, lease.epoch)) return;
      } catch {
        return; // a beat that could not be written only makes the lease look older; the commit re-checks the epoch
      }
      // reaped or superseded: stand down now, killing the session; cancelled: the host is asked to
      // kill the generator (over ssh, killing the session alone would leave it running there)
      standing.lost = true;
      try {
        standing.cancelled = wasCancelled(store, key);
      } catch {
        // dead/ unreadable: stand down as for any lost lease
      }
      if (standing.cancelled && ctx.cancelSession) ctx.cancelSession();
      else ctx.dropSession();
    },
    Math.max(250, (ctx.leaseTtlS * 1000) / 4),
  );
  try {
    return await attempt(ctx, job, digest, lease, standing);
  } finally {
    clearInterval(heartbeat);
  }
}

/** What the heartbeat found: the lease lost, and whether because the job was cancelled. */
interface Standing {
  lost: boolean;
  cancelled: boolean;
}

async function attempt(
  ctx: WorkContext,
  job: Job,
  digest: string,
  lease: LeaseRecord,
  standing: Standing,
): Promise<JobOutcome> {
  const { store } = ctx;
  const { key } = job;
  const epoch = lease.epoch;
  // a promoted job runs the generator of the shadow plane it was promoted from, with the sandbox
  // flags of that run (store/promotion.ts); only a pin this user's promote sealed is followed: one
  // committed on a branch would name any command
  const pinned = readPromotion(store, key, ctx.userSecret);
  if (pinned !== undefined && 'ignored' in pinned)
    ctx.notice?.(`${key.slice(0, 12)}: promotion pin ignored, the job runs as minted: ${pinned.ignored}`);
  const promoted = pinned !== undefined && 'record' in pinned ? pinned.record : undefined;
  const pin: SessionPin | undefined =
    promoted === undefined ? undefined : { generator: promoted.generator, args: promoted.serve_args };
  // promoted or retried: a generation of its own, never the result the host keeps from before
  const fresh = freshGeneration(store, key, epoch, promoted);
  const req = {
    key,
    job_digest: digest,
    epoch,
    worker_id: ctx.worker.id,
    generator: promoted?.generator ?? ctx.generator,
    timeout_ms: ctx.timeoutMs,
    ...(ctx.retryAborted ? { retry_aborted: true } : {}),
    ...(regenerateRequested(store, key, epoch) ? { regenerate: true } : {}),
    ...(fresh === undefined ? {} : { fresh }),
  };
  const budget = ctx.timeoutMs + REQUEST_MARGIN_MS;
  let inputChanged: InputChangedError | InputNotRegularError | undefined;
  let answer: Answer;
  let session: ServeClient | undefined;
  let delivered = false;
  const destination = ctx.launcher.destination;
  try {
    session = await ctx.session(pin);
    // After an earlier attempt, ask first: the host may hold the result already (in doubt ≠ failed).
    answer = epoch > 1 ? await session.request({ ...req, type: 'fetch' }, budget) : { type: 'none' };
    // (a cancel that came while the fetch was out is not followed by a run)
    if (answer.type === 'none' && !standing.cancelled) {
      // each input hashed in full before any of its bytes leaves; later ones are read while the
      // checked ones go out, and a mismatch abandons the bundle (spool-bundle.ts)
      const bundle = streamBundle(store, job);
      try {
        // failed before its first input matched: nothing is sent at all
        const early = await bundle.started;
        if (early !== undefined) {
          if (!(early instanceof InputChangedError || early instanceof InputNotRegularError)) throw early;
          inputChanged = early;
        }
        if (!inputChanged) {
          answer = await session.request({ ...req, type: 'run' }, budget, async (w) => {
            let sent = 0;
            try {
              const chunks = bundle.stream();
              for (;;) {
                let next: IteratorResult<Buffer>;
                try {
                  next = await chunks.next();
                } catch (err) {
                  // checked inputs already left: the body is abandoned, so the host discards all of it
                  await w.abort();
                  if (!(err instanceof InputChangedError || err instanceof InputNotRegularError)) throw err;
                  inputChanged = err;
                  journal(store, {
                    event: 'partial-send',
                    key,
                    epoch,
                    bytes_sent: sent,
                    destination: ctx.launcher.destination,
                    reason: `abandoned, an input changed: ${err.message}`,
                  });
                  return;
                }
                if (next.done) break;
                const chunk = next.value;
                // once written out, a chunk read back from the spool's file is read into again
                await w.chunk(chunk, () => bundle.recycle(chunk));
                sent += chunk.length;
              }
              await w.end();
              delivered = true;
              if (req.regenerate) markRegenerated(store, key, epoch); // the retry is used up
            } catch (err) {
              // a send cut short still put bytes on the host: say how many, and of what
              const whole = await bundle.done.catch(() => undefined);
              journal(store, {
                event: 'partial-send',
                key,
                epoch,
                ...(whole ? { bundle_sha256: bundleSha256(whole.packed), bundle_bytes: whole.bytes } : {}),
                bytes_sent: sent,
                destination: ctx.launcher.destination,
                reason: (err as Error).message,
              });
              throw err;
            }
            const whole = await bundle.done;
            // what left the machine: the bundle's digest, its files, where it went (and the host key ssh verified)
            journal(store, {
              event: 'shipped',
              key,
              epoch,
              bundle_sha256: bundleSha256(whole.packed), // from the per-file digests: the bytes are hashed once
              bundle_bytes: whole.bytes,
              files: whole.packed.map((f) => f.name),
              destination: ctx.launcher.destination,
              ...(await ctx.launcher
                .shipmentFacts()
                .catch((err: Error) => ({ host_key_error: err.message }))),
            });
          });
        }
      } finally {
        await bundle.discard();
      }
    }
  } catch (err) {
    if (standing.cancelled) {
      ctx.dropSession();
      return cancelledOutcome(key, epoch);
    }
    if (err instanceof HostDownError) {
      return requeue(store, key, epoch, err.message, err.code, { spent: false, destination });
    }
    if (!(err instanceof InDoubtError)) throw err;
    ctx.dropSession();
    if (!delivered) {
      // the bundle never reached a generator: the job goes back unspent, and the host is suspect
      ctx.hostTrouble?.(err.message);
      return requeue(store, key, epoch, err.message, err.code, { spent: false, destination });
    }
    // delivered, answer lost: the host may finish and keep the result, so it is asked again first
    recordInDoubt(store, key, epoch, destination);
    const cut = ctx.wasCut?.() === true;
    return requeue(store, key, epoch, cut ? `shutdown: ${err.message}` : err.message, err.code, {
      spent: !cut,
      destination,
    });
  }
  if (standing.cancelled) return standDownCancelled(ctx, session!, key, epoch, answer, budget);
  if (inputChanged) {
    // the one command that brings it back: remint takes a changed input, not a file that is no longer regular
    const reason = `${inputChanged.message}; the job is stale: ${inputChanged.code === INPUT_CHANGED ? deadAdvice(key, INPUT_CHANGED) : 'mint it again once it is a regular file'}`;
    if (!(await release(store, key, epoch, 'dead', { code: inputChanged.code, reason }))) {
      return { key, outcome: 'superseded', reason: `lease of epoch ${epoch} was lost` };
    }
    return { key, outcome: 'dead', reason };
  }
  if (answer.type === 'none')
    return requeue(store, key, epoch, 'the host answered "none" to a run', 'EGJ_BAD_ANSWER');
  if (answer.type === 'error' && answer.code === 'EGJ_SANDBOX_UNAVAILABLE')
    throw new SandboxUnavailableError(ctx.launcher.destination, answer.message); // ends the run; the job goes back
  if (answer.type === 'error' && answer.code === 'EGJ_GENERATION_IN_DOUBT')
    return setAsideInDoubt(store, key, epoch, answer.message);
  if (answer.type === 'error' && answer.code === 'EGJ_GENERATION_RUNNING') {
    // another delivery is generating it on that host: this attempt ran nothing, and a later one
    // gets the result from the host's cache
    const reason = `the host refused: ${answer.code}: ${answer.message}`;
    // unspent, so --max-attempts never ends it: the host backs off (and is given up after MAX_FAILURES)
    // rather than being asked again at once, a new epoch each time, for as long as it answers so
    ctx.hostTrouble?.(reason);
    return requeue(store, key, epoch, reason, answer.code, { spent: false, destination });
  }
  if (answer.type === 'error') {
    const before = REFUSED_BEFORE_GENERATING.has(answer.code);
    // a host older than the `fresh` field refuses the whole request for it
    const older =
      answer.code === 'EGJ_BAD_REQUEST' && fresh !== undefined && answer.message.includes('fresh')
        ? `; this job asks for a fresh generation (it was promoted or retried), which the host's genjob does not know: upgrade genjob there`
        : '';
    const message = `${answer.message}${older}`;
    if (before) ctx.hostTrouble?.(`refused: ${answer.code}: ${message}`);
    return requeue(store, key, epoch, `the host refused: ${answer.code}: ${message}`, answer.code, {
      spent: !before,
      destination,
    });
  }
  if (answer.cacheError)
    journal(store, { event: 'host-cache-failed', key, epoch, reason: answer.cacheError });
  return takeResult(ctx, session!, job, digest, epoch, answer, () => standing.lost);
}

/**
 * The host will not generate the job again without consent (a generation it started may have spent
 * a model call): asking again would get the same refusal, so the job is set aside in dead/ at once,
 * without spending the attempt, and `genjob retry KEY` is the consent that brings it back.
 */
async function setAsideInDoubt(
  store: Store,
  key: string,
  epoch: number,
  message: string,
): Promise<JobOutcome> {
  const reason = `the host refused: EGJ_GENERATION_IN_DOUBT: ${message}; it answers the same until you consent: genjob retry ${key.slice(0, 12)}`;
  markUnspent(store, key, epoch);
  if (!(await release(store, key, epoch, 'dead', { code: 'EGJ_GENERATION_IN_DOUBT', reason })))
    return { key, outcome: 'superseded', reason: `lease of epoch ${epoch} was lost` };
  return { key, outcome: 'dead', reason };
}

function cancelledOutcome(key: string, epoch: number): JobOutcome {
  return { key, outcome: 'superseded', reason: `cancelled (genjob cancel) during epoch ${epoch}` };
}

/**
 * The job was cancelled while the host ran it: the host killed the generator and answered (the
 * stopped run's aborted receipt, which it did not cache). The answer is read to its end, so the
 * session stays usable, and kept in dead/ beside the cancelled job; nothing is committed.
 */
async function standDownCancelled(
  ctx: WorkContext,
  session: ServeClient,
  key: string,
  epoch: number,
  answer: Answer,
  budget: number,
): Promise<JobOutcome> {
  if (answer.type === 'result') {
    try {
      await session.deadline(budget, async () => {
        for await (const _ of answer.tar) {
          // the stopped run's files (none): nothing to keep
        }
      });
    } catch {
      ctx.dropSession();
    }
    deadLetterBytes(ctx.store, `${key}.receipt.e${epoch}`, answer.receiptBytes, {
      key,
      code: CANCELLED,
      reason: 'the answer to a run stopped by genjob cancel',
      epoch,
    });
  }
  return cancelledOutcome(key, epoch);
}
