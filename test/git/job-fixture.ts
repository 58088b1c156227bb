// A job asking for some paths and the ok receipt of its outputs (path → bytes), as work would record
// them: what the git tests put in a store (the commit gate) or in material trees (pull).
import { buildJob, DEFAULT_CONSTRAINTS, type Job, jobDigest } from '../../src/core/job.js';
import { RECEIPT_SCHEMA, type Receipt } from '../../src/core/receipt.js';
import { sha256Hex } from '../../src/core/sha256.js';

export function jobWithReceipt(
  instruction: string,
  outputs: Record<string, string | Buffer>,
  constraints = DEFAULT_CONSTRAINTS,
  opts: {
    /** Each output's digest where the job was minted (default: absent, a file to create). */
    inputs?: Record<string, string | null>;
    /** Outputs the receipt says the generator made executable. */
    executable?: readonly string[];
    /** Files the job only reads (--read): path → digest. */
    reads?: Record<string, string>;
  } = {},
): { job: Job; receipt: Receipt } {
  const job = buildJob(
    instruction,
    Object.keys(outputs).map((path) => ({ path, sha256: opts.inputs?.[path] ?? null })),
    constraints,
    Object.entries(opts.reads ?? {}).map(([path, sha256]) => ({ path, sha256 })),
  );
  const receipt: Receipt = {
    schema: RECEIPT_SCHEMA,
    key: job.key,
    job_digest: jobDigest(job),
    epoch: 1,
    status: 'ok',
    outputs: Object.entries(outputs).map(([path, bytes]) => ({
      path,
      sha256: sha256Hex(bytes),
      bytes: Buffer.byteLength(bytes),
      ...(opts.executable?.includes(path) ? { executable: true as const } : {}),
    })),
    reason: null,
    worker: { id: 'w', host: 'h' },
    generator: { command: 'g', version: null },
    timings: { started_at: 't', finished_at: 't', generate_ms: 1 },
    cached: false,
  };
  return { job, receipt };
}
