// Gate records: `.gen/runs/<run>.gates/<n>.json`, one per closed evaluation, created exclusively and
// never rewritten. Each names the run (and its manifest's digest), the policy, the verdict, the pass
// count and, per intended key, the receipt or dead letter and the check records it used (their digests):
// the evidence. With a signing key the file is a DSSE envelope (payload type GATE_PAYLOAD_TYPE) over the
// canonical record. The evidence holds all that the verdict reads of a terminal key (whether its ok
// receipt verifies too: the same receipt bytes stop verifying when an output is edited or a host key is
// pinned), so the same evidence under the same policy is the same decision. A new attempt, a new
// receipt, a new check record or a receipt that no longer verifies makes a record stale, and the next
// closed evaluation is record n+1. Evaluating again with the same evidence and policy writes nothing.
// Beside each record the user's gate writes its seal (gate-seal.ts), which `apply --gated` requires.
import type { KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { canonicalBytes } from '../core/canonical-json.js';
import { signEnvelope, strictBase64 } from '../core/dsse.js';
import { UsageError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { peekRecord, publishExclusive, readdirOrEmpty, readRecord } from '../store/durable.js';
import { assertRealDirs } from '../store/real-dirs.js';
import type { Store } from '../store/store.js';
import { type GateDecision, type GatePolicy, type KeyRecords, rateText } from './gate-decision.js';
import { gateSealed, sealGate } from './gate-seal.js';
import { type RunRef, runsDir } from './run-name.js';

export const GATE_SCHEMA = 'genjob/gate@1';
export const GATE_PAYLOAD_TYPE = 'application/vnd.genjob.gate+json';

/** What one intended key contributed: the material the verdict rests on, by digest. */
export interface KeyEvidence {
  key: string;
  current: string;
  /** sha256 of the committed receipt's bytes, or null. */
  receipt: string | null;
  /** The dead letter (`dead/<name>`) that ended it, or null. */
  dead: string | null;
  /** Each required checker's record as the gate read it; `current` false once it went stale. */
  checks: Array<{ checker: string; current: boolean; record: string | null; verdict: string }>;
  /** An ok receipt verifies (outputs, signature, trust policy) as gathered; null for any other outcome. */
  verifies: boolean | null;
}

export interface GateRecord {
  schema: typeof GATE_SCHEMA;
  run: string;
  revision: number;
  manifest_sha256: string;
  policy: {
    require_checks: string[];
    min_pass: { num: number; den: number };
    max_fail: number | null;
    allow_flaky: boolean;
  };
  verdict: 'met' | 'not-met';
  passed: number;
  total: number;
  rate: string;
  keys: Array<KeyEvidence & { pass: boolean; why?: string }>;
  evidence_sha256: string;
  closed_at: string;
}

export interface StoredGate {
  seq: number;
  file: string;
  /** sha256 of the file's bytes: what to cite. */
  sha256: string;
  record: GateRecord;
  signed: boolean;
}

// Every object below is built with its keys in sorted order and holds only strings, booleans and nulls, so
// its JSON.stringify is its canonical form (RFC 8785 serialises them as JSON.stringify does); for 10,000
// keys that is ten times faster than canonicalising (a test holds the two equal).
export function evidenceOf(records: readonly KeyRecords[]): KeyEvidence[] {
  // a pruned key's evidence is what the record that judged it holds, read as sameGate reads a record
  return records.map((r) => (r.carried === undefined ? gathered(r) : keyEvidence(r.carried)));
}

function gathered(r: KeyRecords): KeyEvidence {
  return {
    checks: r.checks.map((c) => ({
      checker: c.checker,
      current: c.current,
      record: c.recordDigest ?? null,
      verdict: c.verdict,
    })),
    current: r.current,
    dead: r.outcome.kind === 'dead' ? `dead/${r.outcome.name}` : null,
    key: r.key,
    receipt: r.outcome.kind === 'receipt' || r.outcome.kind === 'pruned' ? r.outcome.receiptDigest : null,
    verifies: r.outcome.kind === 'receipt' && r.outcome.status === 'ok' ? r.outcome.problem === null : null,
  };
}

export function evidenceDigest(evidence: readonly KeyEvidence[]): string {
  return sha256Hex(JSON.stringify(evidence));
}

function policyDoc(p: GatePolicy): GateRecord['policy'] {
  return {
    require_checks: [...p.requireChecks],
    min_pass: { ...p.minPass },
    max_fail: p.maxFail,
    allow_flaky: p.allowFlaky,
  };
}

/** The policy a record was decided under. */
export function recordPolicy(r: GateRecord): GatePolicy {
  const p = r.policy;
  return {
    requireChecks: p.require_checks,
    minPass: p.min_pass,
    maxFail: p.max_fail,
    allowFlaky: p.allow_flaky,
  };
}

/** The record of a closed decision. */
export function buildGateRecord(
  ref: RunRef,
  manifestSha256: string,
  policy: GatePolicy,
  decision: Extract<GateDecision, { state: 'closed' }>,
  records: readonly KeyRecords[],
): GateRecord {
  const evidence = evidenceOf(records);
  return {
    schema: GATE_SCHEMA,
    run: ref.name,
    revision: ref.revision,
    manifest_sha256: manifestSha256,
    policy: policyDoc(policy),
    verdict: decision.met ? 'met' : 'not-met',
    passed: decision.passed,
    total: decision.total,
    rate: rateText(decision.passed, decision.total, policy),
    keys: evidence.map((e, i) => {
      const r = decision.results[i]!;
      return { ...e, pass: r.pass, ...(r.pass ? {} : { why: r.why }) };
    }),
    evidence_sha256: evidenceDigest(evidence),
    closed_at: new Date().toISOString(),
  };
}

export function gatesDir(store: Store, ref: Pick<RunRef, 'id'>): string {
  return join(runsDir(store), `${ref.id}.gates`);
}

const count = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

/**
 * A checker's name as genjob.config.json allows one (check/checker.ts's CHECKER_NAME, not imported: that
 * module loads the config's schema). A gate only writes declared names; a branch's record could hold any
 * string, and one holding a lone surrogate (`"\ud800"`) has no canonical form to compare policies by.
 */
const CHECKER_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** A policy as a gate writes one: what decideGate can be run under. */
function isPolicy(p: unknown): p is GateRecord['policy'] {
  const q = p as GateRecord['policy'] | null;
  return (
    typeof q === 'object' &&
    q !== null &&
    Array.isArray(q.require_checks) &&
    q.require_checks.every((c) => typeof c === 'string' && CHECKER_NAME.test(c)) &&
    count(q.min_pass?.num) &&
    count(q.min_pass.den) &&
    q.min_pass.den > 0 &&
    q.min_pass.num <= q.min_pass.den &&
    (q.max_fail === null || count(q.max_fail)) &&
    typeof q.allow_flaky === 'boolean'
  );
}

/** Parse a gate record file (plain canonical JSON or a DSSE envelope over it). */
export function parseGateRecord(bytes: Buffer, file: string): { record: GateRecord; signed: boolean } {
  const bad = (rule: string) => new UsageError('EGJ_RUN_INVALID', `${file}: not a gate record: ${rule}`);
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch (err) {
    throw bad((err as Error).message);
  }
  let signed = false;
  if (typeof doc.payloadType === 'string') {
    if (doc.payloadType !== GATE_PAYLOAD_TYPE) throw bad(`payload type ${JSON.stringify(doc.payloadType)}`);
    const payload = typeof doc.payload === 'string' ? strictBase64(doc.payload) : null;
    if (payload === null) throw bad('payload is not canonical base64');
    try {
      doc = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
    } catch (err) {
      throw bad((err as Error).message);
    }
    signed = true;
  }
  const record = doc as unknown as GateRecord;
  if (
    record.schema !== GATE_SCHEMA ||
    !Array.isArray(record.keys) ||
    !record.keys.every((k) => typeof k?.current === 'string' && typeof k.pass === 'boolean') ||
    (record.verdict !== 'met' && record.verdict !== 'not-met')
  )
    throw bad(`schema ${GATE_SCHEMA} with keys, verdict and evidence`);
  if (!isPolicy(record.policy)) throw bad('policy: require_checks, min_pass, max_fail and allow_flaky');
  return { record, signed };
}

/**
 * The numbers of the run's gate records (`<n>.json`), newest first. At most 15 digits: a number past 2^53
 * reads back as another (1e20 + 1 is 1e20), so a name a branch commits there would leave the next number
 * taken forever, or name no file. No gate closes 10^15 times: a longer name is no record of genjob's.
 */
function gateSeqs(store: Store, dir: string): number[] {
  return readdirOrEmpty(store, dir)
    .map((n) => /^([1-9][0-9]{0,14})\.json$/.exec(n)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => b - a);
}

/** The number of the run's newest gate record file, unread: whatever it holds, it does not stand while the gate is open. */
export function newestGateSeq(store: Store, ref: Pick<RunRef, 'id'>): number | undefined {
  return gateSeqs(store, gatesDir(store, ref))[0];
}

/** The newest gate record of a run, or undefined when none was written. */
export function newestGate(store: Store, ref: Pick<RunRef, 'id'>): StoredGate | undefined {
  const dir = gatesDir(store, ref);
  const seq = gateSeqs(store, dir)[0];
  if (seq === undefined) return undefined;
  const file = join(dir, `${seq}.json`);
  const bytes = readRecord(store, file)!;
  return { seq, file, sha256: sha256Hex(bytes), ...parseGateRecord(bytes, file) };
}

/**
 * The newest gate record of the run that the user's own gate sealed (a record a branch adds carries no
 * seal and is passed over): the decision whose judgements stand for keys gc pruned since.
 */
export function newestSealedGate(
  store: Store,
  ref: Pick<RunRef, 'id'>,
  secret: Buffer,
): GateRecord | undefined {
  const dir = gatesDir(store, ref);
  for (const seq of gateSeqs(store, dir)) {
    const file = join(dir, `${seq}.json`);
    const bytes = readRecord(store, file);
    if (bytes !== undefined && gateSealed(store, ref, { seq, file, sha256: sha256Hex(bytes) }, secret))
      return parseGateRecord(bytes, file).record;
  }
  return undefined;
}

/** A key's evidence as evidenceOf builds it (same keys, same order), from what a record says of it. */
function keyEvidence(k: GateRecord['keys'][number]): KeyEvidence {
  return {
    checks: Array.isArray(k.checks)
      ? k.checks.map((c) => ({
          checker: c?.checker,
          current: c?.current,
          record: c?.record,
          verdict: c?.verdict,
        }))
      : k.checks,
    current: k.current,
    dead: k.dead,
    key: k.key,
    receipt: k.receipt,
    verifies: k.verifies,
  };
}

/**
 * `stored` says exactly what `decided` (built now, by buildGateRecord) says, its closing time aside: the
 * same run, manifest, policy and evidence, and the same verdict, counts and pass or fail of each key. A
 * record read from .gen/ may have come with a branch: a verdict, a key's pass or a key it lists is taken
 * only when the evidence under the record's policy decides it again.
 */
export function sameGate(stored: GateRecord, decided: GateRecord): boolean {
  return (
    stored.schema === decided.schema &&
    stored.run === decided.run &&
    stored.revision === decided.revision &&
    stored.manifest_sha256 === decided.manifest_sha256 &&
    canonicalBytes(stored.policy).equals(canonicalBytes(decided.policy)) &&
    stored.verdict === decided.verdict &&
    stored.passed === decided.passed &&
    stored.total === decided.total &&
    stored.rate === decided.rate &&
    stored.evidence_sha256 === decided.evidence_sha256 &&
    evidenceDigest(stored.keys.map(keyEvidence)) === decided.evidence_sha256 &&
    stored.keys.every((k, i) => k.pass === decided.keys[i]!.pass && k.why === decided.keys[i]!.why)
  );
}

/** The file's bytes: the canonical record, or a DSSE envelope over it. */
function recordBytes(record: GateRecord, signer: Signer | undefined): Buffer {
  const payload = canonicalBytes(record);
  return signer
    ? canonicalBytes(signEnvelope(GATE_PAYLOAD_TYPE, payload, signer.key, signer.keyid))
    : payload;
}

export interface Signer {
  key: KeyObject;
  keyid: string;
}

/**
 * Write `record` as the run's next gate record, unless the newest one already decides the same thing
 * (then that one is returned, `fresh: false`). Exclusive create: a racing gate takes the next number.
 * With the user's secret, the record returned is sealed as the user's decision (gate-seal.ts).
 */
export function writeGate(
  store: Store,
  ref: Pick<RunRef, 'id'>,
  record: GateRecord,
  signer?: Signer,
  secret?: Buffer | null,
): StoredGate & { fresh: boolean } {
  const stored = publishGate(store, ref, record, signer, secret ?? null);
  if (secret) sealGate(store, ref, stored, secret);
  return stored;
}

/**
 * The newest record as the decision already written, when it is one: it reads as a gate record, says
 * exactly what `record` says and, with the user's secret, carries the user's seal. A newest file that is no
 * record, or that the user's gate did not write (a branch's copy, an envelope whose signature nobody here
 * checked), is never adopted and sealed as the user's: the next number is written instead.
 */
function writtenAlready(
  store: Store,
  ref: Pick<RunRef, 'id'>,
  newest: { seq: number; file: string },
  record: GateRecord,
  secret: Buffer | null,
): StoredGate | undefined {
  // gone, or no regular file (a directory, a FIFO a branch made): empty bytes, which parse as no record
  const bytes = peekRecord(store, newest.file);
  if (bytes === undefined) return undefined;
  const sha256 = sha256Hex(bytes);
  let parsed: ReturnType<typeof parseGateRecord>;
  try {
    parsed = parseGateRecord(bytes, newest.file);
  } catch (err) {
    if (err instanceof UsageError) return undefined;
    throw err;
  }
  if (!sameGate(parsed.record, record)) return undefined;
  if (secret && !gateSealed(store, ref, { ...newest, sha256 }, secret)) return undefined;
  return { ...newest, sha256, ...parsed };
}

function publishGate(
  store: Store,
  ref: Pick<RunRef, 'id'>,
  record: GateRecord,
  signer: Signer | undefined,
  secret: Buffer | null,
): StoredGate & { fresh: boolean } {
  const dir = gatesDir(store, ref);
  store.fs.mkdirSync(dir, { recursive: true });
  // .gen/ can be committed: a branch's `.gen/runs/NAME.gates` link had gate write its records and seals
  // wherever it pointed
  assertRealDirs(store, [runsDir(store), dir], 'gate', 'writes');
  let bytes: Buffer | undefined; // made only when a record is written
  for (;;) {
    const top = gateSeqs(store, dir)[0];
    const newest = top === undefined ? undefined : { seq: top, file: join(dir, `${top}.json`) };
    const same = newest && writtenAlready(store, ref, newest, record, secret);
    if (same) return { ...same, fresh: false };
    bytes ??= recordBytes(record, signer);
    const seq = (newest?.seq ?? 0) + 1;
    const file = join(dir, `${seq}.json`);
    if (publishExclusive(store, file, bytes))
      return { seq, file, sha256: sha256Hex(bytes), record, signed: signer !== undefined, fresh: true };
  }
}
