// The requests `genjob serve` answers, checked before anything is done with them.
// run:   {key, job_digest, epoch, worker_id, generator, timeout_ms} + body = the bundle tar
// fetch: the same header, empty body: "do you hold a result for this key?" (in-doubt recovery)
// cancel: {type: 'cancel'}, empty body, sent while a run generates (genjob cancel KEY): serve kills
//         the generator and the run's own answer follows (aborted, never cached); no answer of its own
// A run or fetch may name a `fresh` generation (a promoted or retried job): it has a cache entry of its own.
import * as z from 'zod/mini';
import { MAX_WAIT_SECONDS } from '../core/duration.js';
import { PLANE } from '../core/plane.js';
import { type Checked, checkSchema } from '../core/schema-check.js';
import { SHA256_HEX } from '../core/sha256.js';
import { generatorCommandProblem, MAX_GENERATOR_CHARS } from './generator-check.js';

export const RequestSchema = z.strictObject({
  type: z.enum(['run', 'fetch']),
  key: z.string().check(z.regex(SHA256_HEX)),
  job_digest: z.string().check(z.regex(SHA256_HEX)),
  epoch: z.number().check(z.int(), z.positive()),
  worker_id: z.string().check(z.maxLength(256)),
  // a command a process can be started with (generator-check.ts: not blank, not too long, no NUL)
  generator: z.nullable(
    z.string().check(
      z.minLength(1),
      z.refine((s) => generatorCommandProblem(s) === null, {
        message: `must be a command of at most ${MAX_GENERATOR_CHARS} characters, not blank, with no NUL`,
      }),
    ),
  ),
  timeout_ms: z.number().check(z.int(), z.positive(), z.maximum(MAX_WAIT_SECONDS * 1000)),
  /** Generate again instead of answering with a cached *aborted* result (`work --retry-aborted`). */
  retry_aborted: z.optional(z.boolean()),
  /** The plane the answer is for (default live); the cache keeps each plane's results apart. */
  plane: z.optional(z.string().check(z.regex(PLANE))),
  /** Generate again instead of answering with any cached result that is not ok (`genjob retry KEY`). */
  regenerate: z.optional(z.boolean()),
  /**
   * A fresh generation of the key (a promoted or retried job): the result is cached under its own entry,
   * apart from the key's earlier ones, and every request naming the same label shares it.
   */
  fresh: z.optional(z.string().check(z.regex(SHA256_HEX))),
});

export type ServeRequest = z.infer<typeof RequestSchema>;

/** A request's header checked: the request, or the first issue (worded as every schema failure is). */
export function checkRequest(header: unknown): Checked<ServeRequest> {
  return checkSchema(RequestSchema, header);
}
