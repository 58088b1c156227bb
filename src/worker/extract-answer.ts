// Take a host's answer archive apart under the job's own contract: only its allowed paths, at most one
// entry per input, within its size limits. The live worker and the shadow runner unpack by this one rule.
import { allowedPaths, type Job } from '../core/job.js';
import { safeExtract } from '../transport/safe-extract.js';

export function extractAnswer(tar: Parameters<typeof safeExtract>[0], job: Job, stagingParent: string) {
  return safeExtract(tar, {
    stagingParent,
    prefix: 'files/',
    allowed: allowedPaths(job),
    maxEntries: job.inputs.length,
    maxFileBytes: job.constraints.max_file_bytes,
    maxTotalBytes: job.constraints.max_total_bytes,
  });
}
