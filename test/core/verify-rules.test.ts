import { describe, expect, it } from 'vitest';
import { RejectedError } from '../../src/core/errors.js';
import { buildJob, jobDigest } from '../../src/core/job.js';
import { RECEIPT_SCHEMA, type Receipt } from '../../src/core/receipt.js';
import { checkReceipt } from '../../src/core/verify-rules.js';

const A = 'a'.repeat(64);
const C = 'c'.repeat(64);
const job = buildJob('do it', [
  { path: 'src/a.py', sha256: A },
  { path: 'src/new.py', sha256: null },
]);
const digest = jobDigest(job);

function receipt(over: Partial<Receipt> = {}): Receipt {
  return {
    schema: RECEIPT_SCHEMA,
    key: job.key,
    job_digest: digest,
    epoch: 2,
    status: 'ok',
    outputs: [{ path: 'src/a.py', sha256: C, bytes: 3 }],
    reason: null,
    worker: { id: 'w', host: 'h' },
    generator: { command: 'g', version: null },
    timings: { started_at: 't', finished_at: 't', generate_ms: 1 },
    cached: false,
    ...over,
  };
}

describe('checkReceipt', () => {
  it('accepts a receipt that matches its job, its newest epoch and its contract', () => {
    expect(() => checkReceipt(job, digest, receipt(), 2, 'r.json')).not.toThrow();
  });

  it.each([
    { rule: 'another key', r: receipt({ key: C }), code: 'EGJ_KEY_MISMATCH' },
    { rule: 'another job digest', r: receipt({ job_digest: C }), code: 'EGJ_DIGEST_MISMATCH' },
    { rule: 'a superseded epoch', r: receipt({ epoch: 1 }), code: 'EGJ_EPOCH_SUPERSEDED' },
    {
      rule: 'status rejected',
      r: receipt({ status: 'rejected', reason: 'wrote x' }),
      code: 'EGJ_STATUS_NOT_OK',
    },
    {
      rule: 'status aborted',
      r: receipt({ status: 'aborted', reason: 'exit 1' }),
      code: 'EGJ_STATUS_NOT_OK',
    },
    {
      rule: 'an output outside the contract',
      r: receipt({ outputs: [{ path: 'src/b.py', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_OUTSIDE_CONTRACT',
    },
    {
      rule: 'an output with ..',
      r: receipt({ outputs: [{ path: '../x', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
    },
    {
      rule: 'an absolute output',
      r: receipt({ outputs: [{ path: '/etc/passwd', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
    },
    {
      rule: 'an output inside a nested .git',
      r: receipt({ outputs: [{ path: 'vendor/lib/.git/config', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
    },
    {
      rule: 'an output inside an NTFS alias of .git',
      r: receipt({ outputs: [{ path: 'src/GIT~1/hooks/pre-commit', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
    },
    {
      rule: 'an output inside a case-folded .gen',
      r: receipt({ outputs: [{ path: '.GEN/queue/x.json', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
    },
    {
      rule: 'an output named __proto__',
      r: receipt({ outputs: [{ path: '__proto__', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_OUTSIDE_CONTRACT',
    },
    {
      rule: 'an output named twice',
      r: receipt({
        outputs: [
          { path: 'src/a.py', sha256: C, bytes: 1 },
          { path: 'src/a.py', sha256: C, bytes: 1 },
        ],
      }),
      code: 'EGJ_DUPLICATE_OUTPUT',
    },
  ])('rejects $rule with $code, naming the file', ({ r, code }) => {
    let err: unknown;
    try {
      checkReceipt(job, digest, r, 2, 'receipts/k.json');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RejectedError);
    expect((err as RejectedError).code).toBe(code);
    expect((err as RejectedError).exitCode).toBe(3);
    expect((err as Error).message).toMatch(/^receipts\/k\.json: /);
  });
});
