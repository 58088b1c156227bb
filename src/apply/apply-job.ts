// Apply one verified job to the repository: write-ahead, atomic per file, idempotent, recoverable.
//   lock → applied/<key>.json? done → applying/<key>.json? finish it → stale check (rules 6, 4), staging
//   objects/ (outputs and backups of the replaced bytes) as each file is read → link them, fsync objects/
//   once → publish applying/<key>.json → every temp written and fsynced; the missing directories made;
//   per file re-check, rename; fsync each directory once → publish applied/<key>.json → journal it →
//   unlink received/<key>.json → drop applying/. A failure before the first rename (a full disk) leaves the tree
//   as it was and takes applying/ back; one after it keeps applying/, and the next apply finishes it.
// A crash at any point is finished by the next applyJob or recoverInterruptedApplies, only once the key
// verifies again and the record is the apply of that receipt (applying/ can be committed on a branch); if
// it leaves both applied/ and received/ (or applying/, or reverted/ for a job applied again after a
// revert), applied/ wins and the leftovers are removed.
import { dirname, join } from 'node:path';
import { canonicalBytes } from '../core/canonical-json.js';
import {
  ConflictError,
  errnoOf,
  GenjobError,
  IoError,
  RejectedError,
  UsageError,
  withNote,
} from '../core/errors.js';
import { type Job, jobDigest } from '../core/job.js';
import { ancestors } from '../core/paths.js';
import { sha256Hex } from '../core/sha256.js';
import { exists, fsyncDir, listNames, publishExclusive, readIfExists } from '../store/durable.js';
import { findJob } from '../store/job-states.js';
import { journal, readJournal } from '../store/journal.js';
import type { Store } from '../store/store.js';
import { type ApplyLock, withApplyLock } from './apply-lock.js';
import { type CurrentFile, expectPlan, planApply, staleError, type Write } from './apply-plan.js';
import {
  APPLIED_SCHEMA,
  APPLYING_SCHEMA,
  type AppliedRecord,
  type ApplyingRecord,
  readApplied,
  readApplying,
} from './apply-records.js';
import { ObjectBatch } from './object-batch.js';
import { resolveRepoPath } from './repo-path.js';
import {
  commitTreeFiles,
  currentFile,
  readObject,
  readRegular,
  readTreeFile,
  sweepTornTemps,
} from './tree-file.js';
import { type FileChange, unifiedDiff } from './unified-diff.js';

export type { Write } from './apply-plan.js';

export interface VerifiedApply {
  store: Store;
  /** The job document (inputs: path → sha256 at mint, or null for a file to create). */
  job: Job;
  jobDigest: string;
  /** sha256 of the receipt file's bytes, recorded in the apply record. */
  receiptSha256: string;
  epoch: number;
  /** Verified outputs: each an allowed path whose bytes at out/<key>/<path> hash to sha256. */
  outputs: Array<{ path: string; sha256: string; bytes: number; executable?: true }>;
}

export type ApplyOutcome =
  | { status: 'applied'; writes: Write[]; recovered: boolean }
  | { status: 'already-applied'; writes: Write[] }
  | { status: 'dry-run'; writes: Write[]; diff?: string };

/** In a dry run of several jobs: the bytes the jobs before this one would have written, by path. */
export type DryRunTree = Map<string, Buffer>;

export interface ApplyOptions {
  dryRun?: boolean;
  diff?: boolean;
  /**
   * A dry run of several jobs in order plans each against the tree the earlier ones would leave (so
   * it stops where the real run would: a later job whose input an earlier one changes is stale); this
   * job's writes are added to it.
   */
  dryRunTree?: DryRunTree;
  /** How long to wait for another apply holding the lock before EGJ_LOCKED (default 0). */
  lockTimeoutMs?: number;
}

export async function applyJob(v: VerifiedApply, opts: ApplyOptions = {}): Promise<ApplyOutcome> {
  if (jobDigest(v.job) !== v.jobDigest) {
    throw new UsageError(
      'EGJ_APPLY_MISMATCH',
      `job ${v.job.key.slice(0, 12)}: jobDigest is not the digest of the job`,
    );
  }
  if (opts.dryRun) return dryRun(v, opts.diff === true, opts.dryRunTree);
  v.store.ensure();
  return withApplyLock(v.store, { timeoutMs: opts.lockTimeoutMs }, (lock) => applyLocked(v, lock));
}

/** What verifying an interrupted apply's key found now: the apply record is finished only when it holds with it. */
export type Backing = Pick<VerifiedApply, 'jobDigest' | 'receiptSha256' | 'outputs'>;

/**
 * Why `record` is not the apply of what was verified, or undefined when it is: its job, its receipt, and
 * every write an output of that receipt with those bytes. A branch can commit applying/ with any job in
 * it: finishing only what the job and receipt standing now vouch for keeps every write verified.
 */
function unbacked(record: ApplyingRecord, b: Backing): string | undefined {
  if (record.job_digest !== b.jobDigest)
    return `it is of job digest ${record.job_digest.slice(0, 12)}, the job's is ${b.jobDigest.slice(0, 12)}`;
  if (record.receipt_sha256 !== b.receiptSha256)
    return `it is of receipt ${record.receipt_sha256.slice(0, 12)}, the receipt's digest is ${b.receiptSha256.slice(0, 12)}`;
  const outputs = new Map(b.outputs.map((o) => [o.path, o.sha256]));
  for (const w of record.writes)
    if (outputs.get(w.path) !== w.after)
      return `its write of ${JSON.stringify(w.path)} is not an output of the receipt with those bytes`;
  return undefined;
}

function unbackedError(store: Store, key: string, why: string): RejectedError {
  const file = store.layout.applying(key);
  return new RejectedError(
    'EGJ_APPLYING_UNVERIFIED',
    `${file}: an interrupted apply that the job and receipt do not vouch for now (${why}); nothing was written; if no apply of yours was interrupted, remove the file`,
    file,
  );
}

/**
 * Finish every apply a crash left in applying/, each only once `vouch` (a verification of its key now,
 * as apply makes one: the job, the receipt under the trust policy, out/) backs it. Returns the keys
 * finished (or found already finished).
 */
export async function recoverInterruptedApplies(
  store: Store,
  opts: { lockTimeoutMs?: number; vouch: (key: string) => Promise<Backing> },
): Promise<string[]> {
  const pending = listNames(store, store.layout.dir('applying'));
  if (pending.length === 0) return [];
  store.ensure();
  // verified before the lock (a verification reads and hashes out/), checked again under it
  const backing = new Map<string, Backing>();
  for (const key of pending) {
    if (readApplied(store, key) !== undefined || readApplying(store, key) === undefined) continue;
    try {
      backing.set(key, await opts.vouch(key));
    } catch (err) {
      if (err instanceof GenjobError) throw unbackedError(store, key, err.message);
      throw err;
    }
  }
  return withApplyLock(store, { timeoutMs: opts.lockTimeoutMs }, (lock) => {
    const finished: string[] = [];
    // re-list under the lock: another process may have finished some meanwhile
    for (const key of listNames(store, store.layout.dir('applying'))) {
      const done = readApplied(store, key);
      if (done !== undefined) {
        settleApplied(store, done);
      } else {
        const record = readApplying(store, key);
        if (record === undefined) continue;
        const b = backing.get(key);
        if (b === undefined) continue; // published since the look: the apply that made it is still at work
        const why = unbacked(record, b);
        if (why !== undefined) throw unbackedError(store, key, why);
        finishApply(store, record, lock, true);
      }
      finished.push(key);
    }
    return finished;
  });
}

function applyLocked(v: VerifiedApply, lock: ApplyLock): ApplyOutcome {
  const { store, job } = v;
  const key = job.key;
  const done = readApplied(store, key);
  if (done !== undefined) {
    settleApplied(store, done);
    return { status: 'already-applied', writes: done.writes };
  }
  const pending = readApplying(store, key);
  if (pending !== undefined) return finishPending(v, pending, lock);
  // verified before the lock was taken: a drop, retry or remint since (they move jobs under this lock,
  // and refuse while applying/ stands) moved the job on, and nothing of it may be applied now
  const state = findJob(store, key)?.state;
  if (state !== 'received' && state !== 'reverted')
    throw new UsageError(
      'EGJ_NOT_RECEIVED',
      `${key.slice(0, 12)}: the job is ${state === undefined ? 'gone (dropped or superseded)' : `now in ${state}/`} since it was verified; nothing was applied`,
    );

  const objects = new ObjectBatch(store);
  let writes: Write[];
  try {
    writes = stageObjects(v, objects);
    objects.publish(); // one fsync of objects/, before the write-ahead record that relies on them
  } catch (err) {
    objects.discard();
    throw err instanceof IoError ? withNote(err, 'nothing was written') : err;
  }

  lock.assertHeld(`publishing ${store.layout.applying(key)}`);
  const finished = readApplied(store, key);
  if (finished !== undefined) return { status: 'already-applied', writes: finished.writes };
  const made = dirsToMake(store, writes);
  const record: ApplyingRecord = {
    schema: APPLYING_SCHEMA,
    key,
    job_digest: v.jobDigest,
    receipt_sha256: v.receiptSha256,
    epoch: v.epoch,
    writes,
    ...(made.length > 0 ? { created_dirs: made } : {}),
    job,
  };
  let intent: boolean;
  try {
    intent = publishExclusive(store, store.layout.applying(key), canonicalBytes(record));
  } catch (err) {
    throw withNote(err, 'nothing was written');
  }
  if (!intent) {
    // Another process (a stale lock taken twice) published first: finish its intent instead of ours.
    const raced = readApplied(store, key);
    if (raced !== undefined) return { status: 'already-applied', writes: raced.writes };
    const other = readApplying(store, key);
    if (other === undefined) {
      throw new ConflictError(
        'EGJ_LOCK_LOST',
        `${store.layout.applying(key)}: another apply raced this one; run apply again`,
      );
    }
    return finishPending(v, other, lock);
  }
  return finishApply(store, record, lock, false);
}

function finishPending(v: VerifiedApply, pending: ApplyingRecord, lock: ApplyLock): ApplyOutcome {
  if (pending.job_digest !== v.jobDigest) {
    throw new ConflictError(
      'EGJ_KEY_REUSED',
      `${v.store.layout.applying(v.job.key)}: an interrupted apply of job digest ${pending.job_digest.slice(0, 12)} ` +
        `is pending for this key, not of ${v.jobDigest.slice(0, 12)}; run \`genjob apply\` on that job first`,
    );
  }
  const why = unbacked(pending, v);
  if (why !== undefined) throw unbackedError(v.store, v.job.key, why);
  return finishApply(v.store, pending, lock, true);
}

/**
 * Bring the tree to the record's after-digests, then publish applied/ and clear the leftovers. A fresh
 * apply that fails before it writes a file takes its write-ahead record back (the job is as it was); once
 * a file is written, or when finishing an interrupted apply, the record stays for the next apply.
 */
function finishApply(
  store: Store,
  record: ApplyingRecord,
  lock: ApplyLock,
  recovered: boolean,
): ApplyOutcome {
  const key = record.key;
  const applyingFile = store.layout.applying(key);
  const paths = record.writes.map((w) => w.path);
  if (recovered) sweepTornTemps(store, paths);
  const finishes = (stale: boolean) =>
    `${applyingFile} is kept, so \`genjob apply\` finishes it${stale ? ' once the file holds the expected bytes again' : ''}`;
  const untouched = (stale: boolean) =>
    recovered ? `nothing more was written; ${finishes(stale)}` : withdraw(store, key, lock);
  const todo: Write[] = [];
  for (const w of record.writes) {
    const now = currentFile(store, w.path).sha256;
    if (now === w.after) continue;
    if (now !== w.before) {
      const what = recovered ? 'the tree changed while an apply was interrupted' : 'a concurrent edit';
      throw staleError(w.path, w.before, now, `${what}; ${untouched(true)}`);
    }
    todo.push(w);
  }
  commitTreeFiles(
    store,
    todo.map((w) => ({
      path: w.path,
      expected: w.before,
      mode: w.mode,
      bytes: () => readObject(store, w.after),
    })),
    {
      untouched: (stale) => (stale ? `a concurrent edit; ${untouched(true)}` : untouched(false)),
      partial: (stale) =>
        `${stale ? 'a concurrent edit; ' : ''}the apply is partial (files already written stay written): ${finishes(stale)}`,
    },
    (path) => lock.assertHeld(`writing ${path}`),
  );
  lock.assertHeld(`publishing ${store.layout.jobFile('applied', key)}`);
  const applied: AppliedRecord = { ...record, schema: APPLIED_SCHEMA, applied_at: new Date().toISOString() };
  let published: boolean;
  try {
    published = publishExclusive(store, store.layout.jobFile('applied', key), canonicalBytes(applied));
  } catch (err) {
    throw withNote(err, `every file is written but the apply is not recorded yet: ${finishes(false)}`);
  }
  if (!published) {
    // someone else finished the same intent first; their record (and journal line) stands
    removeLeftovers(store, key);
    return { status: 'already-applied', writes: readApplied(store, key)?.writes ?? record.writes };
  }
  // journalled before applying/ goes: a crash or a failure in between leaves applying/ next to applied/,
  // and whoever next finds them (settleApplied) writes the line if it is missing
  try {
    journal(store, appliedEvent(applied, recovered));
  } catch (err) {
    throw withNote(
      err,
      `the job is applied, its journal line not written: the next \`genjob apply\` writes it`,
    );
  }
  removeLeftovers(store, key);
  return { status: 'applied', writes: record.writes, recovered };
}

/** The journal line of an apply: `applied_at` tells it from another apply of the same key (after a revert). */
function appliedEvent(applied: AppliedRecord, recovered: boolean) {
  return {
    event: 'applied',
    key: applied.key,
    writes: applied.writes.length,
    applied_at: applied.applied_at,
    ...(recovered ? { recovered: true } : {}),
  };
}

/**
 * An applied key found with its leftovers: when applying/ still stands, the apply may have stopped
 * between publishing applied/ and its journal line (it journals before it removes applying/), so the
 * line is written now unless the journal has it; then the leftovers go.
 */
function settleApplied(store: Store, done: AppliedRecord): void {
  const key = done.key;
  if (exists(store, store.layout.applying(key))) {
    const journalled = () =>
      readJournal(store, key).some((e) => e.event === 'applied' && e.applied_at === done.applied_at);
    // a line the crash tore is ended by the segment's taker (journal-segments.ts): one append is whole
    if (!journalled()) journal(store, appliedEvent(done, true));
  }
  removeLeftovers(store, key);
}

/**
 * Take back the write-ahead record of a fresh apply that wrote nothing, so the job is just as it was
 * (drop and retry refuse a job applying/ names). Returns what to tell the user.
 */
function withdraw(store: Store, key: string, lock: ApplyLock): string {
  const file = store.layout.applying(key);
  try {
    // a lock taken from us may be another apply's now, finishing this very record: it stays then
    lock.assertHeld(`removing ${file}`);
    store.fs.unlinkSync(file);
    fsyncDir(store, dirname(file));
    return 'nothing was written';
  } catch (err) {
    return `nothing was written, but ${file} could not be removed (${(err as Error).message}): the next \`genjob apply\` writes the job from it`;
  }
}

/** The directories the files `writes` creates need and the tree lacks now, sorted (a parent before its children). */
function dirsToMake(store: Store, writes: readonly Write[]): string[] {
  const dirs = new Set<string>();
  for (const w of writes) {
    if (w.before !== null) continue;
    const { existing } = resolveRepoPath(store, w.path, { create: false });
    const chain = ancestors(w.path);
    const there = chain.findIndex((rel) => join(store.root, ...rel.split('/')) === existing);
    for (const rel of chain.slice(there + 1)) dirs.add(rel);
  }
  return [...dirs].sort();
}

/** After applied/<key>.json exists: unlink received/ (or reverted/, when applied again), then applying/ (applied/ wins). */
function removeLeftovers(store: Store, key: string): void {
  for (const file of [
    store.layout.jobFile('received', key),
    store.layout.jobFile('reverted', key),
    store.layout.applying(key),
  ]) {
    try {
      store.fs.unlinkSync(file);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') continue;
      throw IoError.wrap('unlink', file, err);
    }
    fsyncDir(store, dirname(file));
  }
}

/**
 * Rule 6 for the job's reads: a file shipped for context that changed since mint makes the result as
 * stale as a changed input would (the generator saw other bytes than the tree holds now).
 */
function assertReadsCurrent(store: Store, job: Job): void {
  for (const r of job.reads ?? []) {
    const now = currentFile(store, r.path).sha256;
    if (now !== r.sha256)
      throw staleError(
        r.path,
        r.sha256,
        now,
        'rule 6: every file the job reads must still match it; nothing was written',
      );
  }
}

function currentFiles(store: Store, job: Job): Map<string, CurrentFile> {
  return new Map(job.inputs.map((input) => [input.path, currentFile(store, input.path)]));
}

/** The verified bytes of an output (out/<key>/<path>, or objects/<sha256> when out/ holds only a manifest). */
function readOutput(store: Store, key: string, path: string, sha256: string): Buffer {
  const file = join(store.layout.outDir(key), ...path.split('/'));
  let bytes: Buffer;
  try {
    bytes = readRegular(store, file);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw IoError.wrap('read', file, err);
    if (readIfExists(store, store.layout.object(sha256)) === undefined) {
      throw new RejectedError(
        'EGJ_ARTIFACT_MISSING',
        `${file}: output is missing (rule 4); nothing was written`,
        file,
      );
    }
    return readObject(store, sha256);
  }
  const actual = sha256Hex(bytes);
  if (actual !== sha256) {
    throw new RejectedError(
      'EGJ_ARTIFACT_DRIFT',
      `${file}: bytes hash to ${actual.slice(0, 12)}, receipt says ${sha256.slice(0, 12)} (rule 4); nothing was written`,
      file,
    );
  }
  return bytes;
}

/**
 * The stale check of every input (rule 6) and of every output (rule 4, again), each file read once: the
 * bytes a write replaces (objects/<before>, for revert) and the bytes it writes (objects/<after>, for
 * recovery) are staged in `objects` as they are read. Returns the writes; throws if the job is stale.
 */
function stageObjects(v: VerifiedApply, objects: ObjectBatch): Write[] {
  const { store, job } = v;
  const outputs = new Map(v.outputs.map((o) => [o.path, o.sha256]));
  const current = new Map<string, CurrentFile>();
  for (const input of job.inputs) {
    const file = readTreeFile(store, input.path);
    const now = file === null ? null : sha256Hex(file.bytes);
    current.set(input.path, { sha256: now, mode: file?.mode ?? null });
    const after = outputs.get(input.path);
    // bytes a write will replace (what the job was minted from, other than its output): kept for revert
    if (file !== null && now !== null && now === input.sha256 && after !== undefined && after !== now) {
      objects.add(now, file.bytes);
    }
  }
  assertReadsCurrent(store, job);
  const writes = expectPlan(planApply(job, v.outputs, current));
  const written = new Set(writes.map((w) => w.path));
  for (const out of v.outputs) {
    const bytes = readOutput(store, job.key, out.path, out.sha256);
    if (written.has(out.path)) objects.add(out.sha256, bytes);
  }
  return writes;
}

function dryRun(v: VerifiedApply, withDiff: boolean, tree?: DryRunTree): ApplyOutcome {
  const { store, job } = v;
  const key = job.key;
  const done = readApplied(store, key);
  if (done !== undefined) return { status: 'already-applied', writes: done.writes };
  const changes: FileChange[] = [];
  const pending = readApplying(store, key);
  /** The bytes at `path` as the run has left them so far. */
  const before = (path: string) => tree?.get(path) ?? readTreeFile(store, path)?.bytes ?? null;
  let writes: Write[];
  let afterOf: (w: Write) => Buffer;
  if (pending !== undefined) {
    // an interrupted apply: what the next real apply would still write
    writes = pending.writes;
    afterOf = (w) => readObject(store, w.after);
    for (const w of withDiff ? writes : []) {
      const now = before(w.path);
      if (now !== null && sha256Hex(now) === w.after) continue;
      changes.push({ path: w.path, before: now, after: afterOf(w) });
    }
  } else {
    assertReadsCurrent(store, job);
    const current = currentFiles(store, job);
    for (const [path, file] of current) {
      const planned = tree?.get(path);
      if (planned !== undefined) current.set(path, { sha256: sha256Hex(planned), mode: file.mode ?? 0o644 });
    }
    writes = expectPlan(planApply(job, v.outputs, current));
    const after = new Map(v.outputs.map((o) => [o.path, o]));
    afterOf = (w) => readOutput(store, key, w.path, after.get(w.path)!.sha256);
    for (const w of withDiff ? writes : [])
      changes.push({ path: w.path, before: before(w.path), after: afterOf(w) });
  }
  for (const w of tree ? writes : []) tree!.set(w.path, afterOf(w));
  return withDiff ? { status: 'dry-run', writes, diff: unifiedDiff(changes) } : { status: 'dry-run', writes };
}
