// genjob remint KEY...: the next step for a job that went stale because its files changed under it (another
// job applied, a hand edit): mint its successor from the current tree — same instruction, same allowed
// paths and reads, each hashed (and secret-scanned) again, so a new key — then move the old job to dead/
// as superseded by the new key, linked both ways in the journal (store/supersede.ts). The successor is
// minted first: a crash in between leaves both alive, and remint again finishes it; so does a crash while
// the old job's receipt, outputs and file move to dead/ (in that order, store/give-up.ts). Queued, received and
// reverted jobs can be reminted, and jobs work dead-lettered because an input changed before shipping.
import { join } from 'node:path';
import { withApplyLock } from '../apply/apply-lock.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { ConflictError } from '../core/errors.js';
import { buildJob, type Job, type JobInput, type JobRead } from '../core/job.js';
import { parseJob } from '../core/job-schema.js';
import { requireUserSecret } from '../remote/cache-mac.js';
import { deadJobOf, deadReason, INPUT_CHANGED } from '../store/dead-jobs.js';
import { readIfExists } from '../store/durable.js';
import { refuseInterruptedApply } from '../store/interrupted-apply.js';
import { loadJob } from '../store/job-files.js';
import { findJob } from '../store/job-states.js';
import { withKeyLock } from '../store/key-lock.js';
import { mintLocked } from '../store/mint-job.js';
import type { Store } from '../store/store.js';
import { finishSuperseded, supersede } from '../store/supersede.js';
import { chooseKeys, eachKey } from './each-key.js';
import { InputReader } from './mint-inputs.js';

export interface RemintOptions extends CommonOptions {
  keys: string[];
  allowSecret?: string[];
  allowHardlinks?: boolean;
}

export interface Reminted {
  key: string;
  successor: string;
  /** False when the successor was minted before (a remint finished after a crash). */
  minted: boolean;
  dead: string[];
}

/** The job a key names, where remint may take it from, or why it may not. */
function remintable(store: Store, key: string): { job: Job; state: string } {
  // before the successor is minted from a tree an interrupted apply left half written
  refuseInterruptedApply(store, key, 'EGJ_NOT_REMINTABLE', 'remint');
  const found = findJob(store, key);
  if (found?.state === 'queue' || found?.state === 'received' || found?.state === 'reverted')
    return { job: loadJob(store, found.state, key).job, state: found.state };
  const dead = found === undefined ? deadJobOf(store, key) : undefined;
  if (dead !== undefined && deadReason(store, dead.name)?.code === INPUT_CHANGED) {
    const file = join(store.layout.dir('dead'), dead.name);
    return { job: parseJob(readIfExists(store, file)!, file).job, state: 'dead' };
  }
  throw new ConflictError(
    'EGJ_NOT_REMINTABLE',
    `${found?.file ?? key}: only a queued, received or reverted job, or one work dead-lettered as ${INPUT_CHANGED}, can be reminted (this one is ${found?.state ?? (dead ? 'dead' : 'unknown')}${found?.state === 'running' ? '; cancel it first' : ''})`,
  );
}

/** Mint the successor of `key` from the current tree and supersede it, the link sealed under `secret`. */
export async function remintKey(
  store: Store,
  key: string,
  reader: InputReader,
  secret: Buffer,
): Promise<Reminted> {
  // a remint killed after the job file moved (before its links were journalled, or by a genjob that moved
  // it before its receipt): finish it
  if (findJob(store, key) === undefined) {
    const done = await withApplyLock(store, { timeoutMs: 30_000 }, () =>
      withKeyLock(store, key, () => finishSuperseded(store, key)),
    );
    if (done) return { key, successor: done.successor, minted: false, dead: done.dead };
  }
  const { job } = remintable(store, key);
  const typed = (path: string) => ({ typed: path, path });
  for (const input of [...job.inputs, ...(job.reads ?? [])]) reader.check(typed(input.path));
  const inputs: JobInput[] = [];
  for (const input of job.inputs)
    inputs.push(
      reader.exists(input.path) ? await reader.read(typed(input.path)) : { path: input.path, sha256: null },
    );
  const reads = (await reader.readAll((job.reads ?? []).map((r) => typed(r.path)))) as JobRead[];
  const next = buildJob(job.instruction, inputs, job.constraints, reads);
  if (next.key === key)
    throw new ConflictError(
      'EGJ_NOT_REMINTABLE',
      `${key.slice(0, 12)}: none of its files changed since it was minted; its successor would be itself (genjob retry generates it again)`,
    );
  const outcome = await mintLocked(store, next);
  // the apply lock first (apply's own order), so no apply begins between the look and the move
  const dead = await withApplyLock(store, { timeoutMs: 30_000 }, () =>
    withKeyLock(store, key, () => {
      refuseInterruptedApply(store, key, 'EGJ_NOT_REMINTABLE', 'remint');
      const found = findJob(store, key);
      if (found?.state === 'queue' || found?.state === 'received' || found?.state === 'reverted')
        return supersede(store, key, next.key, found, secret);
      const deadJob = found === undefined ? deadJobOf(store, key) : undefined;
      const bytes = deadJob && readIfExists(store, join(store.layout.dir('dead'), deadJob.name));
      if (bytes === undefined || deadReason(store, deadJob!.name)?.code !== INPUT_CHANGED)
        throw new ConflictError(
          'EGJ_NOT_REMINTABLE',
          `${key.slice(0, 12)}: the job moved on while its successor ${next.key.slice(0, 12)} was minted (now ${found?.state ?? 'gone'}); look again`,
        );
      return supersede(store, key, next.key, { dead: bytes }, secret);
    }),
  );
  return { key, successor: next.key, minted: outcome.minted, dead };
}

export function readerFor(
  store: Store,
  o: Pick<RemintOptions, 'allowSecret' | 'allowHardlinks'>,
): InputReader {
  return new InputReader(store.root, new Set(o.allowSecret ?? []), o.allowHardlinks === true);
}

export async function remint(o: RemintOptions): Promise<CommandResult> {
  const store = openStore(o);
  const reader = readerFor(store, o);
  // the link to each successor is sealed as the user's, which is what the run gate follows
  const secret = await requireUserSecret();
  return eachKey(chooseKeys(store, o, [], { dead: true }), 'reminted', async (key) => {
    const r = await remintKey(store, key, reader, secret);
    return {
      key,
      line: `${key.slice(0, 12)} superseded by ${r.successor} (queued; dead/${r.dead[0] ?? '?'})`,
      json: { ok: true, ...r },
    };
  });
}
