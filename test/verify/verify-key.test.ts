import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { buildJob, jobDigest } from '../../src/core/job.js';
import { RECEIPT_SCHEMA, type Receipt } from '../../src/core/receipt.js';
import { NO_TRUST } from '../../src/core/receipt-envelope.js';
import { peekReceipt } from '../../src/core/receipt-peek.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { publishExclusive } from '../../src/store/durable.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import { Store } from '../../src/store/store.js';
import { verifyKey } from '../../src/verify/verify-key.js';

let root: string;
let store: Store;
const job = buildJob('x', [{ path: 'src/a.py', sha256: sha256Hex('old\n') }]);

function receipt(over: Partial<Receipt> = {}): Receipt {
  return {
    schema: RECEIPT_SCHEMA,
    key: job.key,
    job_digest: jobDigest(job),
    epoch: 1,
    status: 'ok',
    outputs: [{ path: 'src/a.py', sha256: sha256Hex('new\n'), bytes: 4 }],
    reason: null,
    worker: { id: 'w', host: 'h' },
    generator: { command: 'g', version: null },
    timings: { started_at: 't', finished_at: 't', generate_ms: 1 },
    cached: false,
    ...over,
  };
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'gj-verify-'));
  store = new Store(root).ensure();
  publishExclusive(store, store.layout.jobFile('received', job.key), jobFileBytes(job));
  beginAttempt(store, job.key, { id: 'w', host: 'h', pid: 1 }, 60, 'local');
  publishExclusive(store, store.layout.receipt(job.key), canonicalBytes(receipt()));
  mkdirSync(join(store.layout.outDir(job.key), 'src'), { recursive: true });
  writeFileSync(join(store.layout.outDir(job.key), 'src/a.py'), 'new\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const out = (p: string) => join(store.layout.outDir(job.key), p);

describe('verifyKey', () => {
  it('passes a received job whose receipt and bytes agree', async () => {
    const v = await verifyKey(store, job.key, NO_TRUST);
    expect(v.receipt.outputs).toHaveLength(1);
    expect(v.state).toBe('received');
  });

  it.each([
    {
      rule: 'drifted bytes',
      act: () => writeFileSync(out('src/a.py'), 'evil\n'),
      code: 'EGJ_ARTIFACT_DRIFT',
    },
    { rule: 'a missing artifact', act: () => unlinkSync(out('src/a.py')), code: 'EGJ_ARTIFACT_MISSING' },
    { rule: 'an extra artifact', act: () => writeFileSync(out('src/b.py'), 'x'), code: 'EGJ_ARTIFACT_EXTRA' },
    {
      rule: 'an artifact that is a symlink',
      act: () => {
        unlinkSync(out('src/a.py'));
        symlinkSync('/etc/passwd', out('src/a.py'));
      },
      code: 'EGJ_ARTIFACT_NOT_REGULAR',
    },
    {
      rule: 'a missing receipt',
      act: () => unlinkSync(store.layout.receipt(job.key)),
      code: 'EGJ_RECEIPT_MISSING',
    },
    {
      rule: 'a receipt from a superseded epoch',
      act: () => beginAttempt(store, job.key, { id: 'w2', host: 'h', pid: 2 }, 60, 'local'),
      code: 'EGJ_EPOCH_SUPERSEDED',
    },
    {
      rule: 'a receipt that is not JSON',
      act: () => writeFileSync(store.layout.receipt(job.key), 'garbage'),
      code: 'EGJ_RECEIPT_SCHEMA',
    },
  ])('rejects $rule with $code', async ({ act, code }) => {
    act();
    await expect(verifyKey(store, job.key, NO_TRUST)).rejects.toMatchObject({ code, exitCode: 3 });
  });

  it('verifies the receipt bytes it is handed (the bytes its caller records), not the file read again', async () => {
    const good = canonicalBytes(receipt());
    const v = await verifyKey(store, job.key, NO_TRUST, 'received', peekReceipt(good));
    expect(v.receiptSha256).toBe(sha256Hex(good));
    const forged = canonicalBytes(
      receipt({ outputs: [{ path: 'src/a.py', sha256: sha256Hex('evil\n'), bytes: 4 }] }),
    );
    await expect(verifyKey(store, job.key, NO_TRUST, 'received', peekReceipt(forged))).rejects.toMatchObject({
      code: 'EGJ_ARTIFACT_DRIFT',
    });
    const shadow = canonicalBytes(receipt({ plane: 'shadow:trial' }));
    await expect(verifyKey(store, job.key, NO_TRUST, 'received', peekReceipt(shadow))).rejects.toMatchObject({
      code: 'EGJ_SHADOW',
    });
  });

  it('refuses a job that has no receipt yet as bad usage, not as a rejection', async () => {
    const queued = buildJob('y', [{ path: 'src/a.py', sha256: null }]);
    publishExclusive(store, store.layout.jobFile('queue', queued.key), jobFileBytes(queued));
    await expect(verifyKey(store, queued.key, NO_TRUST)).rejects.toMatchObject({
      code: 'EGJ_NOT_RECEIVED',
      exitCode: 2,
    });
  });
});
