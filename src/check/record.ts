// A check record: an in-toto Statement v1 whose predicate is a test result (v0.1: `result`,
// `configuration`, `passedTests`, `warnedTests`, `failedTests`) plus genjob's own facts under
// `predicate.genjob` (key, receipt and binding digests, base and result trees, verdict, every attempt).
// Its subject is the receipt and each output by sha256 and the result tree by git tree id. The file is
// the canonical JSON of the Statement or, signed, of a DSSE envelope over it. Decoding trusts nothing:
// size, envelope shape, signature against the keys pinned for checks, canonical payload, schema, and
// a verdict that must follow from the attempts it lists.
import type { KeyObject } from 'node:crypto';
import * as z from 'zod/mini';
import { canonicalBytes, isCanonical } from '../core/canonical-json.js';
import { signEnvelope } from '../core/dsse.js';
import { RejectedError } from '../core/errors.js';
import { envelopeShape, findSigner, type TrustedKey } from '../core/receipt-envelope.js';
import { checkSchema, issueText } from '../core/schema-check.js';
import { CHECKER_NAME } from './checker.js';
import { MAX_CHECK_RECORD_BYTES } from './record-paths.js';
import { type Outcome, VERDICTS, type Verdict, verdictOf } from './verdict.js';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const TEST_RESULT_TYPE = 'https://in-toto.io/attestation/test-result/v0.1';
export const INTOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
export const CHECK_SCHEMA = 'genjob/check@1';

export { MAX_CHECK_RECORD_BYTES };
export const MAX_ATTEMPT_RECORDS = 1000;

const HEX64 = /^[0-9a-f]{64}$/;
/** A git object id: SHA-1 or SHA-256 repositories. */
const GIT_OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

const nat = z.number().check(z.int(), z.nonnegative());
const hex64 = z.string().check(z.regex(HEX64));
const text = (max: number) => z.string().check(z.maxLength(max));

const UsageSchema = z.object({
  prompt_tokens: nat,
  completion_tokens: nat,
  requests: nat,
});
export type Usage = z.infer<typeof UsageSchema>;

const SampleSchema = z.object({
  index: nat,
  vote: z.enum(['pass', 'fail', 'invalid', 'error']),
  score: z.nullable(z.number()),
  reason: text(8192),
  model: z.nullable(text(200)),
});
export type SampleRecord = z.infer<typeof SampleSchema>;

const AttemptSchema = z.object({
  n: z.number().check(z.int(), z.positive()),
  outcome: z.enum(['pass', 'fail', 'uncertain', 'error']),
  exit_code: z.nullable(z.number().check(z.int())),
  signal: z.nullable(text(32)),
  timed_out: z.boolean(),
  ms: z.number().check(z.nonnegative()),
  log_sha256: z.nullable(hex64),
  log_bytes: nat,
  why: z.nullable(text(8192)),
  started_at: text(64),
  samples: z.optional(z.array(SampleSchema).check(z.maxLength(100))),
});
export type AttemptRecord = z.infer<typeof AttemptSchema>;

const SetupSchema = z.object({
  digest: hex64,
  cached: z.boolean(),
  outcome: z.enum(['pass', 'fail', 'uncertain', 'error']),
  exit_code: z.nullable(z.number().check(z.int())),
  ms: z.number().check(z.nonnegative()),
  log_sha256: z.nullable(hex64),
  why: z.nullable(text(8192)),
});
export type SetupRecord = z.infer<typeof SetupSchema>;

const FactsSchema = z.object({
  schema: z.literal(CHECK_SCHEMA),
  key: hex64,
  checker: z.string().check(z.regex(CHECKER_NAME)),
  kind: z.enum(['command', 'judge']),
  receipt_sha256: hex64,
  binding_sha256: hex64,
  base_tree: z.string().check(z.regex(GIT_OID)),
  result_tree: z.string().check(z.regex(GIT_OID)),
  verdict: z.enum(VERDICTS as [Verdict, ...Verdict[]]),
  marks: text(MAX_ATTEMPT_RECORDS * 2),
  sequence: z.number().check(z.int(), z.positive()),
  previous: z.nullable(hex64),
  attempts: z.array(AttemptSchema).check(z.minLength(1), z.maxLength(MAX_ATTEMPT_RECORDS)),
  setup: z.nullable(SetupSchema),
  judge: z.nullable(
    z.object({
      model: text(200),
      /** The base URL asked (judge-endpoint.ts); absent in records made before it was recorded. */
      endpoint: z.optional(z.nullable(text(2048))),
      samples: z.number().check(z.int(), z.positive()),
      quorum: z.number().check(z.int(), z.positive()),
      agreement: text(32),
      /** Tokens spent by the requests made for this record (not those of attempts it carried over). */
      spent: UsageSchema,
    }),
  ),
  sandbox: z.nullable(z.object({ kind: z.enum(['bwrap', 'none']), network: z.boolean() })),
  started_at: text(64),
  finished_at: text(64),
  machine: text(256),
});
export type CheckFacts = z.infer<typeof FactsSchema>;

const DigestSet = z.record(z.string(), z.string());
const StatementSchema = z.object({
  _type: z.literal(STATEMENT_TYPE),
  subject: z.array(z.object({ name: z.string(), digest: DigestSet })).check(z.minLength(1)),
  predicateType: z.literal(TEST_RESULT_TYPE),
  predicate: z.object({
    result: z.enum(['PASSED', 'WARNED', 'FAILED']),
    configuration: z.array(z.object({ name: z.string(), digest: DigestSet })),
    passedTests: z.array(z.string()),
    warnedTests: z.array(z.string()),
    failedTests: z.array(z.string()),
    genjob: FactsSchema,
  }),
});
export type Statement = z.infer<typeof StatementSchema>;

/** The test-result predicate's `result` for a verdict: only a fail is FAILED; what is not decided warns. */
export function resultOf(verdict: Verdict): 'PASSED' | 'WARNED' | 'FAILED' {
  return verdict === 'pass' ? 'PASSED' : verdict === 'fail' ? 'FAILED' : 'WARNED';
}

/** The Statement for these facts about the job's `outputs`. Pure. */
export function buildStatement(
  facts: CheckFacts,
  outputs: ReadonlyArray<{ path: string; sha256: string }>,
): Statement {
  const named = (o: Outcome) =>
    facts.attempts.filter((a) => a.outcome === o).map((a) => `${facts.checker}#${a.n}`);
  return {
    _type: STATEMENT_TYPE,
    subject: [
      { name: `genjob-receipt:${facts.key}`, digest: { sha256: facts.receipt_sha256 } },
      ...outputs.map((o) => ({ name: o.path, digest: { sha256: o.sha256 } })),
      { name: 'genjob-result-tree', digest: { gitTree: facts.result_tree } },
    ],
    predicateType: TEST_RESULT_TYPE,
    predicate: {
      result: resultOf(facts.verdict),
      configuration: [
        { name: `genjob.config.json#checkers.${facts.checker}`, digest: { sha256: facts.binding_sha256 } },
      ],
      passedTests: named('pass'),
      warnedTests: [...named('uncertain'), ...named('error')],
      failedTests: named('fail'),
      genjob: facts,
    },
  };
}

export interface Signing {
  key: KeyObject;
  keyid: string;
}

/** The record file's bytes: the canonical Statement, or a canonical DSSE envelope signed over it. */
export function encodeRecord(statement: Statement, signing?: Signing): Buffer {
  const payload = canonicalBytes(statement);
  if (!signing) return payload;
  return canonicalBytes(signEnvelope(INTOTO_PAYLOAD_TYPE, payload, signing.key, signing.keyid));
}

export interface DecodedRecord {
  statement: Statement;
  facts: CheckFacts;
  /** Name of the pinned check key that verified the envelope; null when none was asked for. */
  signer: string | null;
  signed: boolean;
}

function bad(file: string, rule: string): RejectedError {
  return new RejectedError('EGJ_CHECK_RECORD', `${file}: not a valid check record: ${rule}`, file);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function parseJson(bytes: Uint8Array, file: string, what: string): unknown {
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch (err) {
    throw bad(file, `${what} is not UTF-8 JSON (${(err as Error).message})`);
  }
}

/**
 * Decode a record file. With keys pinned for checks (`trusted` not empty) it must be an envelope one
 * of them signed: an unsigned or otherwise signed record is refused as EGJ_CHECK_SIGNATURE.
 */
export function decodeRecord(bytes: Uint8Array, file: string, trusted: readonly TrustedKey[]): DecodedRecord {
  if (bytes.length > MAX_CHECK_RECORD_BYTES)
    throw bad(file, `${bytes.length} bytes, over the cap of ${MAX_CHECK_RECORD_BYTES}`);
  const outer = parseJson(bytes, file, 'the file');
  let payload: Uint8Array = bytes;
  let signer: string | null = null;
  let signed = false;
  const isEnvelope = typeof outer === 'object' && outer !== null && Object.hasOwn(outer, 'payloadType');
  if (isEnvelope) {
    const env = envelopeShape(outer as Record<string, unknown>, file);
    if (env.payloadType !== INTOTO_PAYLOAD_TYPE)
      throw bad(
        file,
        `payload type ${JSON.stringify(env.payloadType.slice(0, 100))}, not ${INTOTO_PAYLOAD_TYPE}`,
      );
    signed = env.signatures.length > 0;
    if (trusted.length > 0) signer = findSigner(env, trusted);
    payload = env.payload;
  }
  if (trusted.length > 0 && signer === null)
    throw new RejectedError(
      'EGJ_CHECK_SIGNATURE',
      `${file}: ${signed ? 'no key pinned for checks verifies its signature' : 'not signed, but keys are pinned for checks'} (genjob-trust.json)`,
      file,
    );
  const value = isEnvelope ? parseJson(payload, file, 'the signed payload') : outer;
  let canonical: boolean;
  try {
    canonical = isCanonical(payload, value);
  } catch {
    canonical = false;
  }
  if (!canonical) throw bad(file, 'the Statement is not canonical JSON (RFC 8785)');
  const parsed = checkSchema(StatementSchema, value);
  if (!parsed.ok) throw bad(file, `at ${issueText(parsed.issue)}`);
  const facts = parsed.data.predicate.genjob;
  const verdict = verdictOf(facts.attempts.map((a) => a.outcome));
  if (verdict !== facts.verdict)
    throw bad(file, `it says ${facts.verdict}, but its attempts make it ${verdict}`);
  return { statement: parsed.data, facts, signer, signed };
}
