// The receipt: what the generator host claims about one attempt. Untrusted until verified.
// Outputs are a list of {path, sha256, bytes[, executable]}, never a map keyed by path (a path like
// "__proto__" must not be able to reach an object prototype). `executable: true` says the generator
// made the file executable; without it the file keeps the mode it had (a new file: not executable).
import * as z from 'zod/mini';
import { PLANE } from './plane.js';
import { SHA256_HEX } from './sha256.js';

export const RECEIPT_SCHEMA = 'genjob/receipt@1';
export const MAX_RECEIPT_BYTES = 4 * 1024 * 1024;
export const MAX_REASON_CHARS = 8 * 1024;

const sha = z.string().check(z.regex(SHA256_HEX));
const nat = z.number().check(z.int(), z.nonnegative(), z.maximum(Number.MAX_SAFE_INTEGER));
const text = z.string().check(z.maxLength(4096));

export const ReceiptSchema = z.strictObject({
  schema: z.literal(RECEIPT_SCHEMA),
  key: sha,
  job_digest: sha,
  epoch: z.number().check(z.int(), z.positive(), z.maximum(Number.MAX_SAFE_INTEGER)),
  status: z.enum(['ok', 'rejected', 'aborted']),
  outputs: z
    .array(
      z.strictObject({
        path: z.string().check(z.maxLength(4096)),
        sha256: sha,
        bytes: nat,
        executable: z.optional(z.literal(true)),
      }),
    )
    .check(z.maxLength(10_000)),
  reason: z.nullable(z.string().check(z.maxLength(MAX_REASON_CHARS))),
  worker: z.strictObject({ id: text, host: text }),
  generator: z.strictObject({ command: text, version: z.nullable(text) }),
  timings: z.strictObject({ started_at: text, finished_at: text, generate_ms: nat }),
  /** True when the host answered from its result cache instead of generating again. */
  cached: z.boolean(),
  usage: z.optional(z.strictObject({ prompt_tokens: nat, completion_tokens: nat, requests: nat })),
  /** How the generator ran: bwrap (confined), none (--no-sandbox), builtin (no generator code ran). Absent: unconfined. */
  sandbox: z.optional(z.strictObject({ kind: z.enum(['bwrap', 'none', 'builtin']), network: z.boolean() })),
  /** The provider batch that answered this attempt (`work --batch`); absent for an interactive one. */
  batch: z.optional(text),
  /** "live" or "shadow:NAME"; absent in receipts made before planes existed (= live). */
  plane: z.optional(z.string().check(z.regex(PLANE))),
});

export type Receipt = z.infer<typeof ReceiptSchema>;
export type ReceiptOutput = Receipt['outputs'][number];
export type ReceiptStatus = Receipt['status'];
