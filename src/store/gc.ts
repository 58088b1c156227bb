// Retention: plan, then prune, the bulky material of finished jobs older than a window — one recipe
// per kind: an applied key's out/, receipt, the objects no remaining apply record can revert to, and
// (last) its apply record; dead/ entries of keys no longer in the flow; shadow results; staging/ and
// tmp/ leftovers (never younger than an hour, so a running worker's are safe). Each pruned key gets
// its tombstone *before* anything of it is removed, so a crash leaves either the material or the
// tombstone (usually both), never neither. Queued, running and received jobs are never touched.
import { join, relative } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { DEAD_JOB_NAME } from './dead-jobs.js';
import { fsyncDir, readdirOrEmpty, readIfExists } from './durable.js';
import { compactJournal } from './journal-compact.js';
import { SEGMENT_DIR } from './journal-segments.js';
import { assertRealDirs } from './real-dirs.js';
import type { Store } from './store.js';
import { SUPERSEDED } from './supersede.js';
import {
  type PrunedItem,
  readTombstone,
  TOMBSTONE_SCHEMA,
  type Tombstone,
  writeTombstone,
} from './tombstone.js';

export const LEFTOVER_MIN_AGE_MS = 3_600_000;

export interface KeyPlan {
  key: string;
  state: Tombstone['state'];
  finished_at: string | null;
  job_digest: string | null;
  receipt_sha256: string | null;
  items: PrunedItem[];
}

export interface GcPlan {
  cutoff: string;
  keys: KeyPlan[];
  other: PrunedItem[];
  bytes: number;
}

interface Write {
  before: string | null;
  after: string;
}
interface AppliedLoose {
  key?: string;
  job_digest?: string;
  receipt_sha256?: string;
  applied_at?: string;
  writes?: Write[];
}

const KEY_PREFIX = /^([0-9a-f]{64})\./;

function parse<T>(bytes: Buffer | undefined): T | undefined {
  if (!bytes) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8')) as T;
  } catch {
    return undefined;
  }
}

/** The mtime of `path`, Infinity when there is none; a disk that cannot tell is EGJ_IO, not "absent". */
function mtimeMs(store: Store, path: string): number {
  try {
    return store.fs.lstatSync(path).mtimeMs;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return Number.POSITIVE_INFINITY;
    throw err;
  }
}

/** Bytes under `path` (a file or a directory tree), without following symlinks. */
export function sizeOf(store: Store, path: string): number {
  let st: ReturnType<Store['fs']['lstatSync']>;
  try {
    st = store.fs.lstatSync(path);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return 0; // removed meanwhile
    throw err;
  }
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const name of readdirOrEmpty(store, path)) total += sizeOf(store, join(path, name));
  return total;
}

function flowKeys(store: Store): { live: Set<string>; applied: string[] } {
  const live = new Set<string>();
  for (const s of ['queue', 'running', 'received'] as const)
    for (const n of readdirOrEmpty(store, store.layout.dir(s)))
      if (n.endsWith('.json')) live.add(n.slice(0, -5));
  const applied = readdirOrEmpty(store, store.layout.dir('applied'))
    .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
    .map((n) => n.slice(0, -5));
  return { live, applied };
}

/** The directories gc lists and removes entries from (or writes tombstones to). */
const GC_DIRS = [
  'applied',
  'applying',
  'objects',
  'out',
  'receipts',
  'promoted',
  'dead',
  'staging',
  'tmp',
  'tombstones',
  SEGMENT_DIR,
  'shadow',
];

/**
 * Refuse (EGJ_BAD_PATH) a .gen/ whose own directory, or one gc prunes (each shadow plane's too), is a
 * link: a committed `.gen/staging -> ../../elsewhere` had gc remove old entries there.
 */
export function assertGcDirs(store: Store): void {
  const { gen } = store.layout;
  assertRealDirs(store, [gen, ...GC_DIRS.map((d) => join(gen, d))], 'gc');
  for (const plane of readdirOrEmpty(store, join(gen, 'shadow')))
    assertRealDirs(
      store,
      ['', 'results', 'staging'].map((d) => join(gen, 'shadow', plane, d)),
      'gc',
    );
}

/** What gc would remove for `olderThanMs` at `now` (pure reading; --dry-run prints this). */
export function planGc(store: Store, olderThanMs: number, now = Date.now()): GcPlan {
  const cutoff = now - olderThanMs;
  const leftoverCutoff = Math.min(cutoff, now - LEFTOVER_MIN_AGE_MS);
  const { layout } = store;
  const rel = (p: string) => relative(layout.gen, p);
  const item = (kind: PrunedItem['kind'], path: string): PrunedItem => ({
    kind,
    path: rel(path),
    bytes: sizeOf(store, path),
  });
  const { live, applied } = flowKeys(store);
  const keys = new Map<string, KeyPlan>();
  const other: PrunedItem[] = [];

  // applied keys past the window: everything but their attempts (epochs are never reused)
  const keepObjects = new Set<string>();
  const pruneApplied = new Map<string, AppliedLoose>();
  for (const key of applied) {
    const rec = parse<AppliedLoose>(readIfExists(store, layout.jobFile('applied', key)));
    const at = rec?.applied_at ? Date.parse(rec.applied_at) : Number.NaN;
    if (rec && Number.isFinite(at) && at < cutoff && !live.has(key)) pruneApplied.set(key, rec);
    else for (const w of rec?.writes ?? []) for (const d of [w.before, w.after]) if (d) keepObjects.add(d);
  }
  // an interrupted apply still needs every object it names
  for (const n of readdirOrEmpty(store, layout.dir('applying'))) {
    const rec = parse<AppliedLoose>(readIfExists(store, join(layout.dir('applying'), n)));
    for (const w of rec?.writes ?? []) for (const d of [w.before, w.after]) if (d) keepObjects.add(d);
  }
  const objectsOf = new Map<string, string>(); // object → the pruned key that names it
  for (const [key, rec] of pruneApplied) {
    const items: PrunedItem[] = [];
    const out = layout.outDir(key);
    if (mtimeMs(store, out) !== Number.POSITIVE_INFINITY) items.push(item('out', out));
    if (mtimeMs(store, layout.receipt(key)) !== Number.POSITIVE_INFINITY)
      items.push(item('receipt', layout.receipt(key)));
    const pin = join(layout.dir('promoted'), `${key}.json`);
    if (mtimeMs(store, pin) !== Number.POSITIVE_INFINITY) items.push(item('promotion', pin));
    for (const w of rec.writes ?? [])
      for (const d of [w.before, w.after]) if (d && !keepObjects.has(d)) objectsOf.set(d, key);
    keys.set(key, {
      key,
      state: 'applied',
      finished_at: rec.applied_at ?? null,
      job_digest: rec.job_digest ?? null,
      receipt_sha256: rec.receipt_sha256 ?? null,
      items,
    });
  }
  // objects: those no remaining apply record names, older than the window
  for (const n of readdirOrEmpty(store, layout.dir('objects'))) {
    if (!/^[0-9a-f]{64}$/.test(n) || keepObjects.has(n)) continue;
    const path = layout.object(n);
    const owner = objectsOf.get(n);
    if (owner) keys.get(owner)!.items.push(item('object', path));
    else if (mtimeMs(store, path) < cutoff) other.push(item('object', path));
  }
  for (const [key] of pruneApplied)
    keys.get(key)!.items.push(item('applied-record', layout.jobFile('applied', key)));

  // dead/: entries of keys out of the flow (applied keys only once they are pruned), older than the window
  const deadDir = layout.dir('dead');
  for (const n of readdirOrEmpty(store, deadDir)) {
    if (n.endsWith('.why.json') || n.startsWith('.')) continue;
    const path = join(deadDir, n);
    if (mtimeMs(store, path) >= cutoff) continue;
    const key = KEY_PREFIX.exec(n)?.[1];
    const whyPath = `${path}.why.json`;
    const pair = [
      item('dead', path),
      ...(mtimeMs(store, whyPath) !== Number.POSITIVE_INFINITY ? [item('dead', whyPath)] : []),
    ];
    if (key === undefined) {
      other.push(...pair);
      continue;
    }
    if (live.has(key) || (applied.includes(key) && !pruneApplied.has(key))) continue;
    const why = parse<{ code?: string; at?: string }>(readIfExists(store, whyPath));
    // a remint's link (the superseded job file and its reason, a few KB) is how a run finds the job that
    // stands for the key now: pruned, the run lost its successor and its gate opened again for good
    if (why?.code === SUPERSEDED && DEAD_JOB_NAME.test(n)) continue;
    let plan = keys.get(key);
    if (!plan) {
      const t = readTombstone(store, key);
      plan = {
        key,
        state: t?.state ?? 'dead',
        finished_at: null,
        job_digest: t?.job_digest ?? null,
        receipt_sha256: null,
        items: [],
      };
      keys.set(key, plan);
    }
    if (why?.code === 'EGJ_DROPPED' && plan.state === 'dead') plan.state = 'dropped';
    if (plan.state !== 'applied' && why?.at && (plan.finished_at === null || why.at > plan.finished_at))
      plan.finished_at = why.at;
    plan.items.splice(plan.items.length - (plan.state === 'applied' ? 1 : 0), 0, ...pair); // apply record stays last
  }

  // shadow results, and leftovers of interrupted shadow runs
  const shadowRoot = layout.dir('shadow');
  for (const plane of readdirOrEmpty(store, shadowRoot)) {
    for (const key of readdirOrEmpty(store, join(shadowRoot, plane, 'results'))) {
      const dir = join(shadowRoot, plane, 'results', key);
      if (mtimeMs(store, join(dir, 'receipt.json')) < cutoff || mtimeMs(store, dir) < cutoff)
        other.push(item('shadow', dir));
    }
    for (const n of readdirOrEmpty(store, join(shadowRoot, plane, 'staging'))) {
      const path = join(shadowRoot, plane, 'staging', n);
      if (mtimeMs(store, path) < leftoverCutoff) other.push(item('staging', path));
    }
  }
  // staging/ and tmp/ leftovers of crashed processes
  for (const [kind, dir] of [
    ['staging', layout.staging],
    ['tmp', layout.tmp],
  ] as const) {
    for (const n of readdirOrEmpty(store, dir)) {
      const path = join(dir, n);
      if (mtimeMs(store, path) < leftoverCutoff) other.push(item(kind, path));
    }
  }
  const all = [...keys.values()].flatMap((k) => k.items).concat(other);
  return {
    cutoff: new Date(cutoff).toISOString(),
    keys: [...keys.values()].sort((a, b) => a.key.localeCompare(b.key)),
    other,
    bytes: all.reduce((s, i) => s + i.bytes, 0),
  };
}

function removePath(store: Store, relPath: string): void {
  const path = join(store.layout.gen, relPath);
  store.fs.rmSync(path, { recursive: true, force: true });
}

/**
 * Prune what `plan` lists. Call it holding the apply lock (commands/gc.ts does), so no apply publishes
 * objects meanwhile. Per key: tombstone first, its material next, the apply record last. Nothing is
 * removed unless every directory it removes from is a real one (assertGcDirs).
 */
export function executeGc(
  store: Store,
  plan: GcPlan,
  opts: { now?: number; settleMs?: number } = {},
): { keys: number; bytes: number } {
  assertGcDirs(store);
  const now = opts.now ?? Date.now();
  const touched = new Set<string>();
  const pruned_at = new Date(now).toISOString();
  for (const k of plan.keys) {
    writeTombstone(store, {
      schema: TOMBSTONE_SCHEMA,
      key: k.key,
      state: k.state,
      finished_at: k.finished_at,
      job_digest: k.job_digest,
      receipt_sha256: k.receipt_sha256,
      pruned: k.items,
      pruned_at,
    });
    for (const i of k.items) {
      removePath(store, i.path);
      touched.add(join(store.layout.gen, i.path, '..'));
    }
  }
  for (const i of plan.other) {
    removePath(store, i.path);
    touched.add(join(store.layout.gen, i.path, '..'));
  }
  for (const dir of touched) {
    try {
      fsyncDir(store, dir);
    } catch {
      // a directory removed along with its contents
    }
  }
  compactJournal(store, new Set(plan.keys.map((k) => k.key)), Date.parse(plan.cutoff), opts.settleMs);
  return { keys: plan.keys.length, bytes: plan.bytes };
}
