// The verify rules 1–3 (docs/exit-codes.md) as pure checks of a decoded receipt against its job.
// Each failure is a RejectedError (exit 3) with its own code and a message naming the file and rule.
// Rule 4 (bytes) needs the disk: src/verify/verify-key.ts; rule 5 (signature) is in the decoding.
import { RejectedError } from './errors.js';
import { allowedPaths, type Job } from './job.js';
import { pathProblem } from './paths.js';
import type { Receipt } from './receipt.js';

export function checkReceipt(
  job: Job,
  digest: string,
  receipt: Receipt,
  newestEpoch: number,
  file: string,
): void {
  const reject = (code: `EGJ_${string}`, msg: string) => {
    throw new RejectedError(code, `${file}: ${msg}`, file);
  };
  // rule 1: identity and fencing
  if (receipt.key !== job.key)
    reject(
      'EGJ_KEY_MISMATCH',
      `receipt is for key ${receipt.key.slice(0, 12)}, the job is ${job.key.slice(0, 12)}`,
    );
  if (receipt.job_digest !== digest)
    reject(
      'EGJ_DIGEST_MISMATCH',
      `receipt names job digest ${receipt.job_digest.slice(0, 12)}, the job's is ${digest.slice(0, 12)}`,
    );
  if (newestEpoch > 0 && receipt.epoch !== newestEpoch) {
    reject(
      'EGJ_EPOCH_SUPERSEDED',
      `receipt is from epoch ${receipt.epoch}, but the newest attempt is epoch ${newestEpoch}`,
    );
  }
  // rule 2: status
  if (receipt.status !== 'ok')
    reject('EGJ_STATUS_NOT_OK', `status is ${receipt.status}${receipt.reason ? `: ${receipt.reason}` : ''}`);
  // rule 3: every output is a normalised allowed path, named once
  const allowed = allowedPaths(job);
  const seen = new Set<string>();
  for (const o of receipt.outputs) {
    const problem = pathProblem(o.path);
    if (problem) reject('EGJ_PATH_FORM', `output ${JSON.stringify(o.path)}: ${problem}`);
    if (!allowed.has(o.path))
      reject(
        'EGJ_PATH_OUTSIDE_CONTRACT',
        `output ${JSON.stringify(o.path)} is not one of the job's allowed paths`,
      );
    if (seen.has(o.path)) reject('EGJ_DUPLICATE_OUTPUT', `output ${JSON.stringify(o.path)} is named twice`);
    seen.add(o.path);
  }
}
