// The sealed run manifest, `.gen/runs/<id>.json`: the template (instruction and --also templates
// before expansion, the files read) and its digest, the expansion (each matched path and the key
// minted for it) and the intended keys, in order. Written once by exclusive create: the same
// expansion again is a no-op, a different one under the same name a conflict (exit 4), never an
// overwrite. What it seals is the template digest and the expansion; `created_at` is a note. Beside it
// lies the user's seal (run-seal.ts): the run is the user's only once their own mint wrote it, or found it
// holding exactly the run it would write.
import { basename } from 'node:path';
import { canonicalBytes } from '../core/canonical-json.js';
import { ConflictError, UsageError } from '../core/errors.js';
import { SHA256_HEX, sha256Hex } from '../core/sha256.js';
import { publishExclusive, readRecord } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { manifestFile, type RunRef, revisionsOf, runId, runsDir } from './run-name.js';
import { runSealed, sealRun } from './run-seal.js';

export const RUN_SCHEMA = 'genjob/run@1';

export interface RunTemplate {
  instruction: string;
  also: string[];
  reads: string[];
  /** How the paths were chosen: `--each GLOB`, `--each-file FILE`, or null for one job. */
  each: { glob: string } | { file: string } | null;
}

export interface RunEntry {
  /** The matched path the job was expanded from (null for a run of one unexpanded job). */
  path: string | null;
  key: string;
}

export interface RunManifest {
  schema: typeof RUN_SCHEMA;
  name: string;
  revision: number;
  template: RunTemplate;
  template_digest: string;
  expansion: RunEntry[];
  keys: string[];
  created_at: string;
}

/** The digest of a template; `each` is how the paths were found, not what was asked, so it is left out. */
export function templateDigest(t: RunTemplate): string {
  return sha256Hex(canonicalBytes({ instruction: t.instruction, also: t.also, reads: t.reads }));
}

export function buildManifest(
  ref: RunRef,
  template: RunTemplate,
  expansion: readonly RunEntry[],
): RunManifest {
  return {
    schema: RUN_SCHEMA,
    name: ref.name,
    revision: ref.revision,
    template,
    template_digest: templateDigest(template),
    expansion: [...expansion],
    keys: distinctKeys(expansion.map((e) => e.key)),
    created_at: new Date().toISOString(),
  };
}

/** Each key once, where it first appears: two paths that expanded to one job are one intended job. */
export function distinctKeys(keys: readonly string[]): string[] {
  return [...new Set(keys)];
}

/** What a manifest seals: two manifests with the same seal are the same run. */
function seal(m: Pick<RunManifest, 'template_digest' | 'expansion'>): string {
  return sha256Hex(canonicalBytes({ template_digest: m.template_digest, expansion: m.expansion }));
}

/** A hostile template's digest, or null when it holds what canonical JSON refuses (1e400 parses as Infinity). */
function digestOrNull(t: RunTemplate): string | null {
  try {
    return templateDigest(t);
  } catch {
    return null;
  }
}

/** Parse a manifest's bytes; `file` names it in errors. */
export function parseManifest(bytes: Buffer, file: string): RunManifest {
  let doc: RunManifest;
  try {
    doc = JSON.parse(bytes.toString('utf8')) as RunManifest;
  } catch (err) {
    throw new UsageError('EGJ_RUN_INVALID', `${file}: not a run manifest: ${(err as Error).message}`);
  }
  // the keys are the expansion's, each once (a manifest written before listed a repeated key again)
  const expanded = Array.isArray(doc?.expansion) ? doc.expansion.map((e) => e?.key) : [];
  const keysOk =
    Array.isArray(doc?.keys) &&
    Array.isArray(doc.expansion) &&
    expanded.every((k) => typeof k === 'string' && SHA256_HEX.test(k)) &&
    [expanded, distinctKeys(expanded)].some(
      (want) => doc.keys.length === want.length && doc.keys.every((k, i) => k === want[i]),
    );
  // the digest stands for the template only when it is the template's: a run is the same run by its digest
  const templateOk =
    typeof doc?.template === 'object' &&
    doc.template !== null &&
    typeof doc.template_digest === 'string' &&
    digestOrNull(doc.template) === doc.template_digest;
  if (doc?.schema !== RUN_SCHEMA || !keysOk || !templateOk)
    throw new UsageError(
      'EGJ_RUN_INVALID',
      `${file}: not a ${RUN_SCHEMA} manifest (schema, keys and expansion must agree, and the template digest be its template's)`,
    );
  // a run is known by its file's name (gate, seal, report): a manifest naming another run is another run's
  const id = basename(file, '.json');
  const named =
    typeof doc.name === 'string' && Number.isSafeInteger(doc.revision) && doc.revision >= 1
      ? runId(doc.name, doc.revision)
      : undefined;
  if (named !== id)
    throw new UsageError(
      'EGJ_RUN_INVALID',
      `${file}: not the manifest of run ${id}: it names ${named === undefined ? 'no run (a name, and a revision from 1)' : `run ${named}`}`,
    );
  return doc;
}

export function readManifest(store: Store, ref: Pick<RunRef, 'id'>): RunManifest | undefined {
  const file = manifestFile(store, ref);
  const bytes = readRecord(store, file);
  return bytes === undefined ? undefined : parseManifest(bytes, file);
}

/**
 * How `sealManifest` left the run: written by this call; there already under the user's seal; or there
 * without it (from a branch, another machine, or a mint killed between its two writes) and now sealed.
 */
export type Sealing = 'written' | 'same' | 'adopted';

/**
 * Write `m` unless its file exists, then seal the file as the user's run (written first, so a crash
 * between leaves a manifest the same mint seals again); a different run under the name is EGJ_RUN_SEALED.
 */
export function sealManifest(store: Store, m: RunManifest, secret: Buffer): Sealing {
  const ref = { id: runId(m.name, m.revision) };
  store.fs.mkdirSync(runsDir(store), { recursive: true });
  let bytes = sameRunThere(store, m);
  if (bytes === undefined) {
    const mine = Buffer.from(`${JSON.stringify(m, null, 2)}\n`);
    if (publishExclusive(store, manifestFile(store, ref), mine)) {
      sealRun(store, ref, sha256Hex(mine), secret);
      return 'written';
    }
    bytes = sameRunThere(store, m)!; // another mint wrote it meanwhile
  }
  const sha = sha256Hex(bytes);
  if (runSealed(store, ref, sha, secret)) return 'same';
  sealRun(store, ref, sha, secret);
  return 'adopted';
}

/**
 * Before anything is minted: whether run `m` is there already under the user's seal (nothing to write).
 * False when it is not there, or is there without the seal (the mint goes on and sealManifest seals it);
 * another run under its name is EGJ_RUN_SEALED.
 */
export function sealedAlready(store: Store, m: RunManifest, secret: Buffer): boolean {
  const bytes = sameRunThere(store, m);
  return bytes !== undefined && runSealed(store, { id: runId(m.name, m.revision) }, sha256Hex(bytes), secret);
}

/** The bytes of the manifest under `m`'s name, read once, when it holds the same run; EGJ_RUN_SEALED when another. */
function sameRunThere(store: Store, m: RunManifest): Buffer | undefined {
  const file = manifestFile(store, { id: runId(m.name, m.revision) });
  const bytes = readRecord(store, file);
  if (bytes !== undefined) sameRunOrConflict(store, parseManifest(bytes, file), m);
  return bytes;
}

function sameRunOrConflict(store: Store, existing: RunManifest, m: RunManifest): false {
  if (seal(existing) === seal(m)) return false;
  const next = (revisionsOf(store, m.name).at(-1) ?? 1) + 1;
  const ours = new Set(m.keys);
  const theirs = new Set(existing.keys);
  const differ =
    existing.keys.filter((k) => !ours.has(k)).length + m.keys.filter((k) => !theirs.has(k)).length;
  throw new ConflictError(
    'EGJ_RUN_SEALED',
    `${manifestFile(store, { id: runId(m.name, m.revision) })}: run ${runId(m.name, m.revision)} is sealed with another expansion (${existing.keys.length} job(s) there, ${m.keys.length} now, ${differ} key(s) differ${existing.template_digest === m.template_digest ? '' : ', another template'}); nothing was minted. Start a new revision with --run ${runId(m.name, next)}`,
  );
}
