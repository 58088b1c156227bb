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
    {
      rule: 'another key',
      r: receipt({ key: C }),
      code: 'EGJ_KEY_MISMATCH',
      says: `receipt is for key cccccccccccc, the job is ${job.key.slice(0, 12)}`,
    },
    {
      rule: 'another job digest',
      r: receipt({ job_digest: C }),
      code: 'EGJ_DIGEST_MISMATCH',
      says: `receipt names job digest cccccccccccc, the job's is ${digest.slice(0, 12)}`,
    },
    {
      rule: 'a superseded epoch',
      r: receipt({ epoch: 1 }),
      code: 'EGJ_EPOCH_SUPERSEDED',
      says: 'receipt is from epoch 1, but the newest attempt is epoch 2',
    },
    {
      rule: 'status rejected',
      r: receipt({ status: 'rejected', reason: 'wrote x' }),
      code: 'EGJ_STATUS_NOT_OK',
      says: 'status is rejected: wrote x',
    },
    {
      rule: 'status aborted',
      r: receipt({ status: 'aborted', reason: 'exit 1' }),
      code: 'EGJ_STATUS_NOT_OK',
      says: 'status is aborted: exit 1',
    },
    {
      rule: 'status aborted without a reason',
      r: receipt({ status: 'aborted', reason: null }),
      code: 'EGJ_STATUS_NOT_OK',
      says: 'status is aborted',
    },
    {
      rule: 'an output outside the contract',
      r: receipt({ outputs: [{ path: 'src/b.py', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_OUTSIDE_CONTRACT',
      says: `output "src/b.py" is not one of the job's allowed paths`,
    },
    {
      rule: 'an output with ..',
      r: receipt({ outputs: [{ path: '../x', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
      says: 'output "../x": ',
    },
    {
      rule: 'an absolute output',
      r: receipt({ outputs: [{ path: '/etc/passwd', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
      says: 'output "/etc/passwd": ',
    },
    {
      rule: 'an output inside a nested .git',
      r: receipt({ outputs: [{ path: 'vendor/lib/.git/config', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
      says: 'output "vendor/lib/.git/config": ',
    },
    {
      rule: 'an output inside an NTFS alias of .git',
      r: receipt({ outputs: [{ path: 'src/GIT~1/hooks/pre-commit', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
      says: 'output "src/GIT~1/hooks/pre-commit": ',
    },
    {
      rule: 'an output inside a case-folded .gen',
      r: receipt({ outputs: [{ path: '.GEN/queue/x.json', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_FORM',
      says: 'output ".GEN/queue/x.json": ',
    },
    {
      rule: 'an output named __proto__',
      r: receipt({ outputs: [{ path: '__proto__', sha256: C, bytes: 1 }] }),
      code: 'EGJ_PATH_OUTSIDE_CONTRACT',
      says: `output "__proto__" is not one of the job's allowed paths`,
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
      says: 'output "src/a.py" is named twice',
    },
  ])('rejects $rule with $code, naming the file and the rule', ({ r, code, says }) => {
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
    // the whole sentence a user reads: the rule and the values that broke it, not just the code
    const text = (err as Error).message.slice('receipts/k.json: '.length);
    if (says.endsWith(': ')) {
      expect(text.startsWith(says)).toBe(true);
      expect(text.length).toBeGreaterThan(says.length); // the path rule's own words follow
    } else expect(text).toBe(says);
  });

  it('takes a receipt of any epoch when no attempt is recorded (material pulled or imported)', () => {
    expect(() => checkReceipt(job, digest, receipt({ epoch: 7 }), 0, 'r.json')).not.toThrow();
    expect(() => checkReceipt(job, digest, receipt({ epoch: 1 }), 0, 'r.json')).not.toThrow();
  });
});
