// The requests `genjob serve` answers, checked before anything is done with them.
// run:   {key, job_digest, epoch, worker_id, generator, timeout_ms} + body = the bundle tar
// fetch: the same header, empty body: "do you hold a result for this key?" (in-doubt recovery)
// cancel: {type: 'cancel'}, empty body, sent while a run generates (genjob cancel KEY): serve kills
//         the generator and the run's own answer follows (aborted, never cached); no answer of its own
import { z } from 'zod';
import { PLANE } from '../core/plane.js';
import { SHA256_HEX } from '../core/sha256.js';

export const RequestSchema = z.strictObject({
  type: z.enum(['run', 'fetch']),
  key: z.string().regex(SHA256_HEX),
  job_digest: z.string().regex(SHA256_HEX),
  epoch: z.number().int().positive(),
  worker_id: z.string().max(256),
  generator: z.string().min(1).max(4096).nullable(),
  timeout_ms: z
    .number()
    .int()
    .positive()
    .max(7 * 24 * 3600 * 1000),
  /** Generate again instead of answering with a cached *aborted* result (`work --retry-aborted`). */
  retry_aborted: z.boolean().optional(),
  /** The plane the answer is for (default live); the cache keeps each plane's results apart. */
  plane: z.string().regex(PLANE).optional(),
  /** Generate again instead of answering with any cached result that is not ok (`genjob retry KEY`). */
  regenerate: z.boolean().optional(),
});

export type ServeRequest = z.infer<typeof RequestSchema>;
