// One receipt's facts as a report shows them. It is decoded under the repository's trust policy, so the
// signer column names the trusted key that verified it; a receipt that does not decode (bad signature,
// broken schema) still shows what it claims, read loosely, beside the reason it failed. Display only:
// verify and apply decide from the bytes again.
import { GenjobError } from '../core/errors.js';
import { decodeReceiptWithPolicy } from '../core/receipt-decode.js';
import type { ReceiptTrustPolicy } from '../core/receipt-envelope.js';
import { splitEnvelope } from '../core/receipt-peek.js';
import { sha256Hex } from '../core/sha256.js';
import type { ReportReceipt } from './model.js';

export interface ReceiptFacts {
  receipt: ReportReceipt | null;
  outputs: Array<{ path: string; sha256: string }>;
  problem: string | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const nat = (v: unknown): number | null =>
  Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : null;
const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function sandboxOf(v: unknown): string {
  const s = obj(v);
  if (typeof s.kind !== 'string') return 'unrecorded';
  return s.kind === 'bwrap' && s.network === true ? 'bwrap+network' : s.kind;
}

function facts(
  doc: Record<string, unknown>,
  digest: string,
  signer: string,
  trusted: boolean,
): ReportReceipt {
  const worker = obj(doc.worker);
  const generator = obj(doc.generator);
  const timings = obj(doc.timings);
  const usage = doc.usage === undefined ? null : obj(doc.usage);
  return {
    digest,
    status: str(doc.status) ?? 'unreadable',
    epoch: nat(doc.epoch) ?? 0,
    reason: str(doc.reason),
    generator: str(generator.command) ?? '?',
    generatorVersion: str(generator.version),
    workerId: str(worker.id) ?? '?',
    host: str(worker.host) ?? '?',
    sandbox: sandboxOf(doc.sandbox),
    cached: doc.cached === true,
    batch: str(doc.batch),
    plane: str(doc.plane) ?? 'live',
    startedAt: str(timings.started_at),
    finishedAt: str(timings.finished_at),
    generateMs: nat(timings.generate_ms),
    usage: usage
      ? {
          prompt: nat(usage.prompt_tokens) ?? 0,
          completion: nat(usage.completion_tokens) ?? 0,
          requests: nat(usage.requests) ?? 0,
        }
      : null,
    signer,
    signerTrusted: trusted,
    jobDigest: str(doc.job_digest),
  };
}

function outputsOf(doc: Record<string, unknown>): ReceiptFacts['outputs'] {
  if (!Array.isArray(doc.outputs)) return [];
  return doc.outputs.map((o) => ({ path: String(obj(o).path), sha256: String(obj(o).sha256) }));
}

export function receiptFacts(bytes: Buffer, file: string, policy: ReceiptTrustPolicy): ReceiptFacts {
  const digest = sha256Hex(bytes);
  let loose: { payload: Record<string, unknown>; envelope: unknown };
  try {
    loose = splitEnvelope(JSON.parse(bytes.toString('utf8')) as Record<string, unknown>);
  } catch {
    return { receipt: null, outputs: [], problem: `${file}: not a readable receipt (bad JSON)` };
  }
  try {
    const { receipt, signer } = decodeReceiptWithPolicy(bytes, file, policy);
    const doc = receipt as unknown as Record<string, unknown>;
    const named = signer ?? (loose.envelope ? 'signed, no key pinned' : 'unsigned');
    return { receipt: facts(doc, digest, named, signer !== null), outputs: outputsOf(doc), problem: null };
  } catch (err) {
    if (!(err instanceof GenjobError)) throw err;
    const payload = obj(loose.payload);
    return {
      receipt: facts(payload, digest, loose.envelope ? 'signature not trusted' : 'unsigned', false),
      outputs: outputsOf(payload),
      problem: err.message,
    };
  }
}
