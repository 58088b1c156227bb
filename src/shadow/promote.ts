// Promote a shadow answer: never by relabelling its bytes. The key is (re)queued in the live plane with
// a promotion pin naming the generator and sandbox flags the user ran the shadow plane with — from the
// worker's record of that run (shadow-store.ts run.json), never the receipt's generator, which the host
// wrote; the next `genjob work` claims it with a new live epoch, the host generates again (its shadow
// cache entry is keyed apart, and the request names the promotion, so neither the shadow answer nor the
// key's earlier live one can be served), and the answer is a live receipt that goes through every verify rule. A received live answer it replaces is kept in dead/ (EGJ_PROMOTED); the
// journal records the promotion.
import { ConflictError, RejectedError } from '../core/errors.js';
import { decodeReceipt } from '../core/receipt-decode.js';
import { sha256Hex } from '../core/sha256.js';
import { markMinted } from '../store/attempts.js';
import { deadWhy } from '../store/dead-jobs.js';
import { deadLetterFile } from '../store/dead-letter.js';
import { exists, moveState, readdirOrEmpty } from '../store/durable.js';
import { loadJob } from '../store/job-files.js';
import { findJob } from '../store/job-states.js';
import { journal, journalledSince } from '../store/journal.js';
import { withKeyLock } from '../store/key-lock.js';
import { type Promotion, readPromotion, writePromotion } from '../store/promotion.js';
import type { Store } from '../store/store.js';
import { ShadowStore } from './shadow-store.js';

export interface Promoted {
  key: string;
  plane: string;
  generator: string;
  serve_args: string[];
  from_state: 'queue' | 'received';
  replaced: string[];
  /** Set when this wrote the line of a promote killed after it moved the job back to the queue. */
  finished?: true;
}

const PROMOTED = 'EGJ_PROMOTED';

/**
 * A promote of a received job killed after it moved the job back to the queue and before its journal
 * line: the user's pin is there, no `promoted` line since it was written, and the live answer it
 * replaced went to dead/ (EGJ_PROMOTED) since then. Returns where that answer went (as a promote
 * names it), or undefined when the queued job is no such thing. Call under the key's lock.
 */
function interruptedPromote(store: Store, key: string, secret: Buffer): string[] | undefined {
  const pin = readPromotion(store, key, secret);
  if (pin === undefined || !('record' in pin)) return undefined;
  const since = pin.record.at;
  if (journalledSince(store, key, 'promoted', since)) return undefined;
  const aside = readdirOrEmpty(store, store.layout.dir('dead'))
    .filter(
      (n) => (n.startsWith(`${key}.receipt.`) || n.startsWith(`${key}.out.`)) && !n.endsWith('.why.json'),
    )
    .filter((n) => {
      const why = deadWhy(store, n);
      return why?.code === PROMOTED && typeof why.at === 'string' && why.at >= since;
    })
    .sort()
    .map((n) => `dead/${n}`);
  return aside.length > 0 ? aside : undefined;
}

/** The worker's record of the run behind the plane's answer, naming a generator, or why there is none. */
function recordedRun(
  plane: ShadowStore,
  key: string,
  epoch: number,
  secret: Buffer,
): { generator: string; serve_args: string[] } {
  const read = plane.run(key, secret);
  const file = plane.runFile(key);
  const again = `run genjob work --shadow ${plane.name} --generator CMD ${key.slice(0, 12)} again`;
  if (read !== undefined && 'ignored' in read)
    throw new RejectedError(
      'EGJ_SHADOW_RUN_UNKNOWN',
      `${read.ignored}; only a run this user made is pinned: ${again}`,
      file,
    );
  const run = read?.record;
  if (run === undefined || run.epoch !== epoch)
    throw new RejectedError(
      'EGJ_SHADOW_RUN_UNKNOWN',
      `${file}: no record of how this worker ran ${plane.plane}'s answer (an older genjob stored it); the receipt's generator is the host's word and is never pinned: ${again}`,
      file,
    );
  if (run.generator === null)
    throw new RejectedError(
      'EGJ_SHADOW_RUN_UNKNOWN',
      `${file}: ${plane.plane} was run without --generator (the host chose its own); the receipt's generator is the host's word and is never pinned: ${again}`,
      file,
    );
  return { generator: run.generator, serve_args: run.serve_args };
}

/** `secret` is the user's: it checks the run record's seal and seals the pin. */
export async function promoteShadow(
  store: Store,
  name: string,
  key: string,
  secret: Buffer,
): Promise<Promoted> {
  const plane = new ShadowStore(store, name);
  const file = plane.receiptFile(key);
  const bytes = plane.receipt(key);
  if (bytes === undefined)
    throw new RejectedError(
      'EGJ_RECEIPT_MISSING',
      `${file}: ${plane.plane} has no answer for ${key.slice(0, 12)}; run genjob work --shadow ${name} ${key.slice(0, 12)} first`,
      file,
    );
  const receipt = decodeReceipt(bytes, file);
  if (receipt.status !== 'ok')
    throw new RejectedError(
      'EGJ_STATUS_NOT_OK',
      `${file}: the shadow answer's status is ${receipt.status}; only an ok answer is worth promoting`,
      file,
    );
  return withKeyLock(store, key, () => {
    const found = findJob(store, key);
    if (!found || (found.state !== 'queue' && found.state !== 'received')) {
      throw new ConflictError(
        'EGJ_NOT_PROMOTABLE',
        `${found?.file ?? key}: only a queued or received job can be promoted (this one is ${found ? `in ${found.state}/` : 'unknown'}${found?.state === 'running' ? '; wait until its attempt lands' : ''})`,
      );
    }
    const { digest } = loadJob(store, found.state, key);
    if (receipt.key !== key || receipt.job_digest !== digest)
      throw new RejectedError(
        'EGJ_DIGEST_MISMATCH',
        `${file}: the shadow answer is for job digest ${receipt.job_digest.slice(0, 12)}, the live job's is ${digest.slice(0, 12)}`,
        file,
      );
    const ran = recordedRun(plane, key, receipt.epoch, secret);
    // read before the pin is written again: it says when an interrupted promote began
    const interrupted = found.state === 'queue' ? interruptedPromote(store, key, secret) : undefined;
    const pin: Promotion = {
      schema: 'genjob/promotion@1',
      key,
      job_digest: digest,
      plane: plane.plane,
      generator: ran.generator,
      serve_args: ran.serve_args,
      shadow_receipt_sha256: sha256Hex(bytes),
      at: new Date().toISOString(),
    };
    // the pin first: a crash after it and before the requeue is finished by promoting again
    writePromotion(store, secret, pin);
    // the promoted run's attempts count afresh against --max-attempts: marked before the job is queued
    markMinted(store, key);
    const replaced: string[] = interrupted ?? [];
    if (found.state === 'received') {
      const why = {
        key,
        code: PROMOTED,
        reason: `replaced by a live run of ${plane.plane}'s generator`,
      };
      for (const [from, base] of [
        [store.layout.receipt(key), `${key}.receipt`],
        [store.layout.outDir(key), `${key}.out`],
      ] as const) {
        if (!exists(store, from)) continue;
        const n = deadLetterFile(store, from, base, why);
        if (n) replaced.push(`dead/${n}`);
      }
      moveState(store, found.file, store.layout.jobFile('queue', key));
    }
    // the job a promote killed after its move came from received/, and its line says so
    const from = interrupted ? 'received' : found.state;
    journal(store, {
      event: 'promoted',
      key,
      plane: plane.plane,
      generator: pin.generator,
      serve_args: ran.serve_args,
      shadow_receipt_sha256: pin.shadow_receipt_sha256,
      from_state: from,
    });
    return {
      key,
      plane: plane.plane,
      generator: pin.generator,
      serve_args: ran.serve_args,
      from_state: from,
      replaced,
      ...(interrupted ? { finished: true as const } : {}),
    };
  });
}
