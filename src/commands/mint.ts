// genjob mint: turn an instruction and the paths it may touch (and the files it may only read) into an
// immutable job in queue/ — or, with --each GLOB / --each-file FILE, one job per matched file, the
// instruction and --also expanded per path. --run NAME seals the jobs' keys as a run (src/run/). Paths are
// checked, hashed by streaming and scanned for secrets in the same read (mint-inputs.ts); job files are
// published exclusively. Paths another live job already allows are named on stderr (they would fight).
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { buildJob, instructionProblem, type Job, type JobInput, type JobRead } from '../core/job.js';
import { pathProblem } from '../core/paths.js';
import { readText } from '../core/read-text.js';
import { shellWord } from '../core/shell-quote.js';
import { eachListed, eachMatch } from '../run/each-paths.js';
import { expandAll } from '../run/expand.js';
import { overlapLines, overlaps } from '../run/overlap.js';
import { buildManifest, type Sealing, sealedAlready, sealManifest } from '../run/run-manifest.js';
import { manifestFile, parseRunName, type RunRef, runId } from '../run/run-name.js';
import { gitignoreIgnoresGen } from '../store/gitignore.js';
import { MintMemo, type MintOutcome, mintLocked } from '../store/mint-job.js';
import type { Store } from '../store/store.js';
import {
  assertNoSecretInInstruction,
  cwdInRoot,
  InputReader,
  type Typed,
  toContractPath,
} from './mint-inputs.js';

export interface MintOptions extends CommonOptions {
  paths: string[];
  message?: string;
  file?: string;
  create?: string[];
  allowSecret?: string[];
  /** Ship inputs with a link count above 1 (refused by default, like symlinks). */
  allowHardlinks?: boolean;
  /** Files shipped for context only: hashed into the key, never an output. */
  read?: string[];
  /** Fan out: one job per tracked file matching this glob (relative to the root). */
  each?: string;
  /** Fan out: one job per path this file lists (one a line; - for stdin). */
  eachFile?: string;
  /** With --each: more allowed paths per job, {path} {dir} {name} {stem} expanded; created when missing. */
  also?: string[];
  /** Seal the minted keys as this run (.gen/runs/NAME.json). */
  run?: string;
}

/**
 * ` (did you mean …?)` when the first argument is no file but reads as the instruction (`genjob mint
 * "Fix the bug" src/a.py`, as `git commit` takes no message either); empty otherwise.
 */
function meantMessage(o: MintOptions): string {
  const [first, ...rest] = o.paths;
  if (first === undefined || existsSync(first)) return ''; // paths are typed relative to the cwd
  const paths = rest.length > 0 ? rest.map(shellWord).join(' ') : 'FILE...';
  return ` (did you mean: genjob mint -m ${shellWord(first)} ${paths}?)`;
}

function readInstruction(o: MintOptions): string {
  if (o.message !== undefined && o.file !== undefined)
    throw new UsageError('EGJ_USAGE', 'give the instruction with -m or -f, not both');
  let text: string;
  if (o.file !== undefined) {
    try {
      text = readText(o.file === '-' ? 0 : o.file); // -f - reads stdin, like git commit -F -
    } catch (err) {
      throw new UsageError(
        'EGJ_BAD_INPUT',
        `${o.file === '-' ? 'stdin' : o.file}: cannot read the instruction file (${(err as Error).message})`,
      );
    }
  } else if (o.message !== undefined) text = o.message;
  else throw new UsageError('EGJ_USAGE', `no instruction: pass -m "..." or -f FILE${meantMessage(o)}`);
  const where = o.file === '-' ? 'stdin' : (o.file ?? '-m');
  if (text.trim() === '') throw new UsageError('EGJ_BAD_INPUT', `${where}: the instruction is empty`);
  const problem = instructionProblem(text);
  if (problem) throw new UsageError('EGJ_BAD_INPUT', `${where}: ${problem}`);
  return text;
}

/** True the first time a mint finds .gen/ not ignored (a marker in .gen/ keeps it to once). */
function gitignoreNoteDue(store: Store): boolean {
  if (gitignoreIgnoresGen(store.root)) return false;
  try {
    closeSync(openSync(join(store.layout.gen, 'gitignore-noted'), 'wx'));
    return true;
  } catch {
    return false;
  }
}

function checkFlags(o: MintOptions): void {
  const fanOut = o.each !== undefined || o.eachFile !== undefined;
  if (o.each !== undefined && o.eachFile !== undefined)
    throw new UsageError('EGJ_USAGE', 'give --each GLOB or --each-file FILE, not both');
  if (fanOut && (o.paths.length > 0 || (o.create ?? []).length > 0))
    throw new UsageError(
      'EGJ_USAGE',
      'with --each, every job allows its matched file: name more paths per job with --also (created when missing), not as arguments or --create',
    );
  if (!fanOut && (o.also ?? []).length > 0)
    throw new UsageError('EGJ_USAGE', '--also goes with --each GLOB or --each-file FILE');
  if (o.eachFile === '-' && o.file === '-')
    throw new UsageError(
      'EGJ_USAGE',
      'stdin can hold the instruction (-f -) or the path list (--each-file -), not both',
    );
}

export async function mint(o: MintOptions): Promise<CommandResult> {
  checkFlags(o);
  const instruction = readInstruction(o);
  // a bad run name is refused before anything is read or written
  const ref = o.run === undefined ? undefined : sealRef(o.run);
  // the run is sealed under the user's secret: without a place to keep it, nothing is minted
  const run = ref && { ...ref, secret: await (await import('../remote/cache-mac.js')).requireUserSecret() };
  const store = openStore(o);
  const { root } = store;
  const here = cwdInRoot(root);
  const contractPath = (typed: string, flag: string) => toContractPath(root, typed, flag, here);
  const reader = new InputReader(
    root,
    new Set((o.allowSecret ?? []).map((p) => contractPath(p, '--allow-secret'))),
    o.allowHardlinks === true,
  );
  const readTyped = (o.read ?? []).map((typed) => ({ typed, path: contractPath(typed, '--read') }));
  const where = o.file ?? 'the instruction (-m)';
  if (o.each !== undefined || o.eachFile !== undefined)
    return mintEach(store, o, reader, { instruction, where, readTyped, run });

  const creates = (o.create ?? []).map((typed) => ({ typed, path: contractPath(typed, '--create') }));
  const allowed = o.paths.map((typed) => ({ typed, path: contractPath(typed, 'a path') }));
  if (allowed.length + creates.length === 0)
    throw new UsageError('EGJ_USAGE', 'name at least one file the generator may change (or --create one)');
  assertOnce([...allowed, ...creates]);
  assertOnce(readTyped);
  await assertNoSecretInInstruction(instruction, where);
  for (const input of [...allowed, ...creates, ...readTyped]) reader.check(input);
  const inputs: JobInput[] = creates.map((c) => reader.create(c));
  inputs.push(...(await reader.readAll(allowed)));
  const reads = await readsOf(reader, readTyped);
  const job = buildJob(instruction, inputs, undefined, reads);
  const manifest =
    run && buildManifest(run, runTemplate(instruction, [], readTyped, null), [{ path: null, key: job.key }]);
  if (manifest && sealedAlready(store, manifest, run!.secret)) return alreadySealed(store, run!, [job]);
  const warnings = overlaps(store, [job]);
  const outcome = await mintLocked(store, job);
  const sealing = manifest && sealManifest(store, manifest, run!.secret);
  const status = outcome.minted
    ? `minted: ${job.inputs.length} path(s)${reads.length > 0 ? ` and ${reads.length} read-only` : ''} → .gen/${outcome.state}/${job.key}.json${outcome.finished ? ` (${FINISHED})` : ''}`
    : outcome.prunedOn
      ? `already applied (pruned on ${outcome.prunedOn})`
      : `already minted (state: ${outcome.state})`;
  return {
    human: job.key,
    note: run ? `${status}\n${runLine(run, sealing!)}` : status,
    ...stderrOf(store, warnings),
    json: {
      ok: true,
      key: job.key,
      digest: outcome.digest,
      minted: outcome.minted,
      state: outcome.state,
      ...(outcome.finished ? { finished: true } : {}),
      ...(outcome.prunedOn ? { pruned_on: outcome.prunedOn } : {}),
      inputs: job.inputs,
      ...(job.reads ? { reads: job.reads } : {}),
      ...(run ? { run: run.id, ...sealingJson(sealing!) } : {}),
      ...(warnings.length > 0 ? { warnings } : {}),
    },
  };
}

/** Said of a mint that wrote the `minted` line of one killed after it published the job file. */
const FINISHED = 'an interrupted mint finished';

/** A run to seal, with the user's secret that seals it (run-seal.ts). */
interface MintRun extends RunRef {
  secret: Buffer;
}

function runLine(run: RunRef, sealing: Sealing): string {
  const how = {
    written: 'sealed',
    same: 'already sealed',
    adopted: 'sealed as yours (it was there without your seal)',
  };
  return `run ${run.id} ${how[sealing]}: .gen/runs/${run.id}.json`;
}

function sealingJson(sealing: Sealing): { sealed: boolean; adopted?: true } {
  return { sealed: sealing === 'written', ...(sealing === 'adopted' ? { adopted: true as const } : {}) };
}

/** The run mint seals: `NAME` is revision 1, `NAME@N` revision N. */
function sealRef(typed: string): RunRef {
  const { name, revision = 1 } = parseRunName(typed);
  return { name, revision, id: runId(name, revision) };
}

function runTemplate(
  instruction: string,
  also: readonly string[],
  reads: readonly Typed[],
  each: { glob: string } | { file: string } | null,
) {
  return { instruction, also: [...also], reads: reads.map((r) => r.path).sort(), each };
}

async function readsOf(reader: InputReader, typed: readonly Typed[]): Promise<JobRead[]> {
  return (await reader.readAll(typed)) as JobRead[]; // read() never gives a null digest
}

function stderrOf(store: Store, warnings: ReturnType<typeof overlaps>): { stderr?: string } {
  const note = gitignoreNoteDue(store)
    ? 'genjob: note: .gitignore does not ignore .gen/ (the queue and its results); `genjob init` adds it (said once)\n'
    : '';
  const text = overlapLines(warnings) + note;
  return text === '' ? {} : { stderr: text };
}

interface EachContext {
  instruction: string;
  where: string;
  readTyped: Typed[];
  run: MintRun | undefined;
}

/** The fan-out: one job per matched path, then the run sealed (after its jobs, so a sealed run is whole). */
async function mintEach(
  store: Store,
  o: MintOptions,
  reader: InputReader,
  ctx: EachContext,
): Promise<CommandResult> {
  const { root } = store;
  const readPaths = new Set(ctx.readTyped.map((r) => r.path));
  const listed = o.each !== undefined ? await eachMatch(root, o.each) : await eachListed(root, o.eachFile!);
  // a file given with --read is context for every job, never one of the targets
  const matched = listed.filter((p) => !readPaths.has(p));
  if (matched.length === 0)
    throw new UsageError('EGJ_NO_MATCH', `every matched file is also given with --read; no job to mint`);
  const also = o.also ?? [];
  const expanded = expandAll(matched, ctx.instruction, also);
  for (const r of ctx.readTyped) reader.check(r);
  const reads = await readsOf(reader, ctx.readTyped);
  // every file to hash, once, with a few reads in flight; then each job is built from what was read
  const allowedOf = expanded.map((e) => [
    { typed: e.path, path: e.path },
    ...e.also.map((path) => alsoPath(path, e.path)),
  ]);
  for (const list of allowedOf) assertOnce(list);
  assertOnce(ctx.readTyped);
  for (const list of allowedOf) for (const t of list) reader.check(t);
  await reader.readAll(allowedOf.flat().filter((t) => reader.exists(t.path)));
  const jobs: Job[] = [];
  for (const [i, e] of expanded.entries()) {
    // the paths put into it can make the instruction of one job too long
    const problem = instructionProblem(e.instruction);
    if (problem) throw new UsageError('EGJ_BAD_INPUT', `${ctx.where}, for ${e.path}: ${problem}`);
    await assertNoSecretInInstruction(e.instruction, ctx.where);
    const inputs: JobInput[] = [];
    for (const t of allowedOf[i]!)
      inputs.push(reader.exists(t.path) ? await reader.read(t) : reader.create(t));
    const both = inputs.find((input) => readPaths.has(input.path));
    if (both)
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${both.path}: both --read and allowed for ${e.path}; a read file is never an output (drop one of them)`,
      );
    jobs.push(buildJob(e.instruction, inputs, undefined, reads));
  }
  const each = o.each !== undefined ? { glob: o.each } : { file: o.eachFile! };
  const manifest =
    ctx.run &&
    buildManifest(
      ctx.run,
      runTemplate(ctx.instruction, also, ctx.readTyped, each),
      expanded.map((e, i) => ({ path: e.path, key: jobs[i]!.key })),
    );
  // the same command again: the run is sealed as the user's with exactly these jobs, so nothing is written
  if (manifest && sealedAlready(store, manifest, ctx.run!.secret))
    return alreadySealed(store, ctx.run!, jobs);
  // two paths can expand to one job (an --also template that names the same files for both): it is one
  // job, minted once and counted once by the run, and the later path says which it is the same as
  const firstPath = new Map<string, string>();
  for (const [i, e] of expanded.entries())
    if (!firstPath.has(jobs[i]!.key)) firstPath.set(jobs[i]!.key, e.path);
  const sameAs = expanded.map((e, i) => {
    const first = firstPath.get(jobs[i]!.key)!;
    return first === e.path ? undefined : first;
  });
  const distinct = jobs.filter((_, i) => sameAs[i] === undefined);
  const warnings = overlaps(store, distinct);
  const minted = new Map<string, MintOutcome>();
  const memo = new MintMemo(store); // the journal read once for all the jobs found minted already
  for (const job of distinct) minted.set(job.key, await mintLocked(store, job, memo));
  const outcomes: MintOutcome[] = jobs.map((job) => minted.get(job.key)!);
  const sealing = manifest && sealManifest(store, manifest, ctx.run!.secret);
  const fresh = [...minted.values()].filter((m) => m.minted).length;
  const lines = expanded.map(
    (e, i) =>
      `${e.path}: ${jobs[i]!.key.slice(0, 12)}${sameAs[i] !== undefined ? ` (the same job as ${sameAs[i]})` : outcomes[i]!.finished ? ` (${FINISHED})` : outcomes[i]!.minted ? '' : ` (already minted, state: ${outcomes[i]!.state})`}`,
  );
  const collapsed = jobs.length - distinct.length;
  lines.push(
    `minted ${fresh} of ${distinct.length} job(s) (${distinct.length - fresh} already minted${collapsed > 0 ? `; ${collapsed} path(s) gave a job another path gave` : ''})${ctx.run ? `; ${runLine(ctx.run, sealing!)}` : ''}`,
  );
  return {
    human: distinct.map((job) => job.key).join('\n'),
    note: lines.join('\n'),
    ...stderrOf(store, warnings),
    json: {
      ok: true,
      ...(ctx.run
        ? { run: ctx.run.id, ...sealingJson(sealing!), manifest: manifestFile(store, ctx.run) }
        : {}),
      minted: fresh,
      jobs: expanded.map((e, i) => ({
        path: e.path,
        key: jobs[i]!.key,
        digest: outcomes[i]!.digest,
        minted: sameAs[i] === undefined && outcomes[i]!.minted,
        state: outcomes[i]!.state,
        ...(sameAs[i] === undefined && outcomes[i]!.finished ? { finished: true } : {}),
        ...(sameAs[i] === undefined ? {} : { same_as: sameAs[i] }),
      })),
      ...(warnings.length > 0 ? { warnings } : {}),
    },
  };
}

/**
 * A path given twice on the command line (`mint -m x a.py a.py`, or `./a.py` and `a.py`): mint sorts the
 * paths, so only a repeat is a mistake, named as typed.
 */
function assertOnce(list: readonly Typed[]): void {
  const seen = new Map<string, string>();
  for (const { typed, path } of list) {
    const first = seen.get(path);
    if (first === undefined) {
      seen.set(path, typed);
      continue;
    }
    const as = first === typed ? '' : ` (as ${first} and ${typed})`;
    throw new UsageError('EGJ_BAD_PATH', `${path} is given twice${as}; name each file once`);
  }
}

/** An expanded --also path as a contract path (relative to the root), or why it is not one. */
function alsoPath(path: string, matched: string): Typed {
  const problem = pathProblem(path);
  if (problem)
    throw new UsageError('EGJ_BAD_PATH', `--also for ${matched}: ${JSON.stringify(path)}: ${problem}`);
  return { typed: `${path} (--also for ${matched})`, path };
}

function alreadySealed(store: Store, run: RunRef, jobs: readonly Job[]): CommandResult {
  return {
    human: [...new Set(jobs.map((j) => j.key))].join('\n'),
    note: `run ${run.id} is already sealed with ${jobs.length === 1 ? 'this job' : `these ${jobs.length} jobs`}: ${manifestFile(store, run)}; nothing was written`,
    json: {
      ok: true,
      run: run.id,
      sealed: false,
      manifest: manifestFile(store, run),
      minted: 0,
      jobs: jobs.map((j) => ({ key: j.key, minted: false })),
    },
  };
}
