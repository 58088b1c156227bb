// Where a report's run comes from, read from the run plane's files as docs/runs.md defines them: the
// sealed manifest `.gen/runs/<NAME>.json` (`NAME@N.json` for revision N; NAME alone is the newest),
// its keys each followed to the job that stands for it now (a dead letter with `superseded_by`), and
// the newest gate record `.gen/runs/<id>.gates/<n>.json` (canonical JSON, or a DSSE envelope over it)
// shown as it was closed: verdict, rate, policy, the file's digest, and stale when the manifest or a
// key's job, receipt, dead letter or check record (or whether that record is current) is no longer
// what it names. This adapter evaluates no gate (`genjob gate` does); it is the report's only reader
// of runs.
import { join } from 'node:path';
import { type CheckContext, checkContext, stateOf } from '../check/check-state.js';
import { strictBase64 } from '../core/dsse.js';
import { UsageError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { deadJobs } from '../store/dead-jobs.js';
import { readdirOrEmpty, readIfExists } from '../store/durable.js';
import { keysIn, PRECEDENCE } from '../store/job-states.js';
import { Store } from '../store/store.js';
import type { ReportGate, ReportRun } from './model.js';

const RUN_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const GATE_SCHEMA = 'genjob/gate@1';
const GATE_PAYLOAD_TYPE = 'application/vnd.genjob.gate+json';
/** Supersession links followed at most from one key, as the run plane does. */
const MAX_LINKS = 64;

interface GateEntry {
  key: string;
  current: string;
  receipt: string | null;
  dead: string | null;
  /** `current`: whether the record was current when the gate read it (a record closed by an older genjob has none). */
  checks: Array<{ checker: string; verdict: string; record: string | null; current?: boolean }>;
}

interface GateDoc {
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
  manifest_sha256: string;
  keys: GateEntry[];
}

function invalid(file: string, rule: string): UsageError {
  return new UsageError('EGJ_USAGE', `${file}: not a run file genjob can read: ${rule}`);
}

function parseJson(bytes: Buffer, file: string): Record<string, unknown> {
  try {
    const doc = JSON.parse(bytes.toString('utf8')) as unknown;
    if (typeof doc === 'object' && doc !== null && !Array.isArray(doc)) return doc as Record<string, unknown>;
  } catch (err) {
    throw invalid(file, (err as Error).message);
  }
  throw invalid(file, 'not a JSON object');
}

/** `NAME` (the newest revision) or `NAME@N`: the manifest file it names. */
function manifestOf(store: Store, typed: string): { file: string; id: string } {
  const m = /^([^@]*)(?:@([1-9][0-9]{0,6}))?$/.exec(typed);
  if (!m || !RUN_NAME.test(m[1]!))
    throw new UsageError(
      'EGJ_USAGE',
      `--run ${JSON.stringify(typed)}: a run name is 1-64 of a-z 0-9 . _ - starting with a letter or digit, optionally followed by @N`,
    );
  const name = m[1]!;
  const dir = store.layout.dir('runs');
  const revisions = readdirOrEmpty(store, dir)
    .map((f) =>
      f === `${name}.json`
        ? 1
        : f.startsWith(`${name}@`)
          ? Number(/^@([1-9][0-9]*)\.json$/.exec(f.slice(name.length))?.[1])
          : NaN,
    )
    .filter((n) => Number.isSafeInteger(n));
  const revision = m[2] === undefined ? Math.max(0, ...revisions) : Number(m[2]);
  if (!revisions.includes(revision))
    throw new UsageError('EGJ_USAGE', `--run ${typed}: no run of that name under ${dir}/`);
  const id = revision === 1 ? name : `${name}@${revision}`;
  return { file: join(dir, `${id}.json`), id };
}

/** The sealed keys of a manifest, in the run's order, and the sha256 of its bytes. */
function sealedKeys(store: Store, file: string): { keys: string[]; sha256: string } {
  const bytes = readIfExists(store, file) ?? Buffer.alloc(0);
  const doc = parseJson(bytes, file);
  if (
    doc.schema !== 'genjob/run@1' ||
    !Array.isArray(doc.keys) ||
    !doc.keys.every((k) => typeof k === 'string' && HEX64.test(k))
  )
    throw invalid(file, 'schema genjob/run@1 with its keys');
  return { keys: doc.keys as string[], sha256: sha256Hex(bytes) };
}

/** The newest gate record's bytes and file, or undefined when the run has none. */
function newestGate(store: Store, id: string): { file: string; bytes: Buffer } | undefined {
  const dir = join(store.layout.dir('runs'), `${id}.gates`);
  const seqs = readdirOrEmpty(store, dir)
    .map((n) => Number(/^([1-9][0-9]*)\.json$/.exec(n)?.[1]))
    .filter((n) => Number.isSafeInteger(n));
  if (seqs.length === 0) return undefined;
  const file = join(dir, `${Math.max(...seqs)}.json`);
  const bytes = readIfExists(store, file);
  return bytes ? { file, bytes } : undefined;
}

function parseGate(bytes: Buffer, file: string): GateDoc {
  let doc = parseJson(bytes, file);
  if (typeof doc.payloadType === 'string') {
    if (doc.payloadType !== GATE_PAYLOAD_TYPE)
      throw invalid(file, `payload type ${JSON.stringify(doc.payloadType)}`);
    const payload = typeof doc.payload === 'string' ? strictBase64(doc.payload) : null;
    if (payload === null) throw invalid(file, 'payload is not canonical base64');
    doc = parseJson(payload, file);
  }
  const g = doc as unknown as GateDoc;
  const ok =
    doc.schema === GATE_SCHEMA &&
    (g.verdict === 'met' || g.verdict === 'not-met') &&
    Number.isSafeInteger(g.passed) &&
    Number.isSafeInteger(g.total) &&
    typeof g.rate === 'string' &&
    typeof g.policy === 'object' &&
    g.policy !== null &&
    Array.isArray(g.keys) &&
    g.keys.every(
      (k) => typeof k?.key === 'string' && typeof k.current === 'string' && Array.isArray(k.checks),
    );
  if (!ok) throw invalid(file, `schema ${GATE_SCHEMA} with keys, verdict and rate`);
  return g;
}

/** The policy as `genjob gate` takes it. */
function policyText(p: GateDoc['policy']): string {
  const parts: string[] = [];
  if (p.min_pass && p.min_pass.den > 0) parts.push(`--min-pass ${(p.min_pass.num * 100) / p.min_pass.den}%`);
  if (p.max_fail !== null && p.max_fail !== undefined) parts.push(`--max-fail ${p.max_fail}`);
  for (const c of p.require_checks ?? []) parts.push(`--require-check ${c}`);
  if (p.allow_flaky) parts.push('--allow-flaky');
  return parts.join(' ');
}

/** Where each key stands now: live (a state directory) or its newest dead letter, and a successor. */
class Standing {
  private readonly live = new Set<string>();
  private readonly dead: Map<string, string>;
  constructor(private readonly store: Store) {
    for (const state of PRECEDENCE) for (const k of keysIn(store, state)) this.live.add(k);
    this.dead = new Map(deadJobs(store).map((d) => [d.key, d.name]));
  }

  /** The job that stands for `key` now: itself unless dead as superseded, else its successor's, followed. */
  current(key: string): string {
    let at = key;
    const seen = new Set([key]);
    for (let i = 0; i < MAX_LINKS && !this.live.has(at); i++) {
      const next = this.successor(at);
      if (next === undefined || seen.has(next)) break;
      seen.add(next);
      at = next;
    }
    return at;
  }

  private successor(key: string): string | undefined {
    const name = this.dead.get(key);
    if (name === undefined) return undefined;
    try {
      const why = JSON.parse(
        readIfExists(this.store, join(this.store.layout.dir('dead'), `${name}.why.json`))?.toString('utf8') ??
          'null',
      ) as { superseded_by?: unknown } | null;
      // only a remint writes `superseded_by` (its code says superseded); the run plane follows the same field
      const next = why?.superseded_by;
      return typeof next === 'string' && HEX64.test(next) ? next : undefined;
    } catch {
      return undefined;
    }
  }

  /** Whether `e` still names what stands for its key: the same job, receipt bytes, dead letter and check records. */
  same(e: GateEntry, checks: CheckContext): boolean {
    const current = this.current(e.key);
    if (current !== e.current) return false;
    const receipt = this.live.has(current)
      ? readIfExists(this.store, this.store.layout.receipt(current))
      : undefined;
    if ((receipt === undefined ? null : sha256Hex(receipt)) !== e.receipt) return false;
    const dead = this.live.has(current) || !this.dead.has(current) ? null : `dead/${this.dead.get(current)}`;
    if (dead !== e.dead) return false;
    return e.checks.every((c) => {
      const s = stateOf(checks, current, c.checker);
      return (
        s.verdict === c.verdict &&
        (s.recordDigest ?? null) === c.record &&
        (c.current === undefined || c.current === s.current)
      );
    });
  }
}

export async function readRun(root: string, name: string): Promise<ReportRun> {
  const store = new Store(root);
  const { file, id } = manifestOf(store, name);
  const standing = new Standing(store);
  const manifest = sealedKeys(store, file);
  const keys = manifest.keys.map((k) => standing.current(k));
  const found = newestGate(store, id);
  let gate: ReportGate | null = null;
  if (found) {
    const g = parseGate(found.bytes, found.file);
    const checks = await checkContext(root);
    gate = {
      state: 'closed',
      met: g.verdict === 'met',
      passed: g.passed,
      total: g.total,
      rate: g.rate,
      policy: policyText(g.policy),
      recordDigest: sha256Hex(found.bytes),
      stale: g.manifest_sha256 !== manifest.sha256 || !g.keys.every((e) => standing.same(e, checks)),
      waiting: null,
    };
  }
  return { name: id, keys, gate };
}
