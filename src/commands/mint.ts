// genjob mint: turn an instruction and the paths it may touch into an immutable job in queue/.
// Paths are checked (inside the root, regular files, no symlinks or hardlinks, not in .gen/ or .git/), hashed
// by streaming, and scanned for secrets in the same read; the job file is published exclusively.
import { closeSync, constants, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { UsageError } from '../core/errors.js';
import { buildJob, type JobInput } from '../core/job.js';
import { ancestors, pathProblem } from '../core/paths.js';
import { createSecretScanner, scanSecretText, secretError, secretPathProblem } from '../core/secrets.js';
import { gitignoreIgnoresGen } from '../store/gitignore.js';
import { hashFile, hashSmallFileSync, SMALL_FILE_BYTES } from '../store/hash-file.js';
import { mintJob } from '../store/mint-job.js';
import type { Store } from '../store/store.js';

export interface MintOptions extends CommonOptions {
  paths: string[];
  message?: string;
  file?: string;
  create?: string[];
  allowSecret?: string[];
  /** Ship inputs with a link count above 1 (refused by default, like symlinks). */
  allowHardlinks?: boolean;
}

/** A user-typed path (relative to the working directory) as a contract path relative to the root. */
function toContractPath(root: string, typed: string, flag: string): string {
  const abs = resolve(process.cwd(), typed);
  const rel = relative(root, abs);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
    throw new UsageError('EGJ_BAD_PATH', `${typed}: ${flag} must be inside the repository root ${root}`);
  }
  const p = rel.split(sep).join('/');
  const problem = pathProblem(p);
  if (problem) throw new UsageError('EGJ_BAD_PATH', `${typed}: ${problem}`);
  return p;
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function checkAncestors(root: string, p: string, typed: string): void {
  for (const dir of ancestors(p)) {
    const st = lstatOrNull(resolve(root, dir));
    if (st === null) return; // the rest does not exist either
    if (st.isSymbolicLink())
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${typed}: ${dir} is a symlink; genjob never writes through links`,
      );
    if (!st.isDirectory()) throw new UsageError('EGJ_BAD_PATH', `${typed}: ${dir} is not a directory`);
  }
}

/** The first bytes of a file (never through a symlink), or undefined when there is none to read. */
function firstBytes(path: string): Uint8Array | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(8);
    return buf.subarray(0, readSync(fd, buf, 0, buf.length, 0));
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function readInstruction(o: MintOptions): string {
  if (o.message !== undefined && o.file !== undefined)
    throw new UsageError('EGJ_USAGE', 'give the instruction with -m or -f, not both');
  let text: string;
  if (o.file !== undefined) {
    try {
      text = readFileSync(o.file === '-' ? 0 : o.file, 'utf8'); // -f - reads stdin, like git commit -F -
    } catch (err) {
      throw new UsageError(
        'EGJ_BAD_INPUT',
        `${o.file === '-' ? 'stdin' : o.file}: cannot read the instruction file (${(err as Error).message})`,
      );
    }
  } else if (o.message !== undefined) text = o.message;
  else throw new UsageError('EGJ_USAGE', 'no instruction: pass -m "..." or -f FILE');
  if (text.trim() === '')
    throw new UsageError(
      'EGJ_BAD_INPUT',
      `${o.file === '-' ? 'stdin' : (o.file ?? '-m')}: the instruction is empty`,
    );
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

export async function mint(o: MintOptions): Promise<CommandResult> {
  const instruction = readInstruction(o);
  const store = openStore(o);
  const { root } = store;
  const allowed = new Set((o.allowSecret ?? []).map((p) => toContractPath(root, p, '--allow-secret')));
  const creates = (o.create ?? []).map((typed) => ({ typed, path: toContractPath(root, typed, '--create') }));
  const reads = o.paths.map((typed) => ({ typed, path: toContractPath(root, typed, 'a path') }));
  if (reads.length + creates.length === 0)
    throw new UsageError('EGJ_USAGE', 'name at least one file the generator may change (or --create one)');

  const instructionFinding = scanSecretText(instruction)[0];
  if (instructionFinding) {
    // not secretError(): its hint, --allow-secret, cannot let an instruction through
    const where = `${o.file ?? 'the instruction (-m)'}:${instructionFinding.line}`;
    throw new UsageError(
      'EGJ_SECRET',
      `${where}: looks like a secret (${instructionFinding.rule}); refusing to ship it to the generator host. Take it out of the instruction (--allow-secret does not apply to it)`,
    );
  }

  for (const { typed, path } of [...reads, ...creates]) {
    checkAncestors(root, path, typed);
    const why = secretPathProblem(path, () => firstBytes(resolve(root, path)));
    if (why && !allowed.has(path)) throw secretError(typed, why);
  }
  const inputs: JobInput[] = [];
  for (const { typed, path } of creates) {
    if (lstatOrNull(resolve(root, path)) !== null) {
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${typed}: --create names a file that already exists; list it as a path instead`,
      );
    }
    inputs.push({ path, sha256: null });
  }
  // hash (and scan) with a few reads in flight: many small files are latency-bound
  const pending = [...reads];
  const workers = Array.from({ length: Math.min(8, pending.length) }, async () => {
    for (let next = pending.shift(); next; next = pending.shift())
      inputs.push(await readInput(root, next, allowed, o.allowHardlinks === true));
  });
  await Promise.all(workers);

  const job = buildJob(instruction, inputs);
  const outcome = mintJob(store, job);
  const human = outcome.minted
    ? `${job.key}\nminted: ${job.inputs.length} path(s) → .gen/queue/${job.key}.json`
    : outcome.prunedOn
      ? `${job.key}\nalready applied (pruned on ${outcome.prunedOn})`
      : `${job.key}\nalready minted (${outcome.state})`;
  return {
    human,
    ...(gitignoreNoteDue(store)
      ? {
          stderr:
            'genjob: note: .gitignore does not ignore .gen/ (the queue and its results); `genjob init` adds it (said once)\n',
        }
      : {}),
    json: {
      ok: true,
      key: job.key,
      digest: outcome.digest,
      minted: outcome.minted,
      state: outcome.state,
      ...(outcome.prunedOn ? { pruned_on: outcome.prunedOn } : {}),
      inputs: job.inputs,
    },
  };
}

async function readInput(
  root: string,
  input: { typed: string; path: string },
  allowSecret: ReadonlySet<string>,
  allowHardlinks: boolean,
): Promise<JobInput> {
  const abs = resolve(root, input.path);
  const st = lstatOrNull(abs);
  if (st === null)
    throw new UsageError(
      'EGJ_BAD_PATH',
      `${input.typed}: no such file (use --create for a file the generator should create)`,
    );
  if (st.isSymbolicLink())
    throw new UsageError('EGJ_BAD_PATH', `${input.typed}: is a symlink; genjob only ships regular files`);
  if (!st.isFile()) throw new UsageError('EGJ_BAD_PATH', `${input.typed}: is not a regular file`);
  if (st.nlink > 1 && !allowHardlinks) {
    // Another name for the same bytes, possibly outside the repository (a key file, another checkout).
    throw new UsageError(
      'EGJ_BAD_PATH',
      `${input.typed}: has ${st.nlink} hard links; genjob only ships files with one name (pass --allow-hardlinks to ship it anyway)`,
    );
  }
  const scanner = allowSecret.has(input.path) ? undefined : createSecretScanner();
  const onChunk = scanner ? (c: Buffer) => scanner.push(c) : undefined;
  const { sha256 } =
    st.size <= SMALL_FILE_BYTES ? hashSmallFileSync(abs, onChunk) : await hashFile(abs, onChunk);
  const finding = scanner?.end().findings[0];
  if (finding) throw secretError(input.typed, finding.rule, finding.line);
  return { path: input.path, sha256 };
}
