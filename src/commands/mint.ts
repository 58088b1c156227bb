// genjob mint: turn an instruction and the paths it may touch into an immutable job in queue/.
// Paths are checked (inside the root, regular files, no symlinks or hardlinks, not in .gen/ or .git/), hashed
// by streaming, and scanned for secrets in the same read; the job file is published exclusively.
import { closeSync, constants, lstatSync, openSync, readSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { isSystemError } from '../core/errno.js';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { buildJob, type JobInput } from '../core/job.js';
import { ancestors, pathProblem } from '../core/paths.js';
import { readText } from '../core/read-text.js';
import { SECRET_HEAD_BYTES, secretPathProblem } from '../secrets/path-rules.js';
import { instructionSecretError, secretError } from '../secrets/refusal.js';
import { createSecretScanner, scanSecretText } from '../secrets/scanner.js';
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

/** A plain relative path: no empty, `.` or `..` segment, so joining it to a directory is the same as resolving it. */
const PLAIN_RELATIVE = /^(?!\/)(?:(?!\.\.?(?:\/|$))[^/]+(?:\/|$))+$/;

/**
 * A user-typed path (relative to the working directory) as a contract path relative to the root.
 * `base` is the working directory relative to the root (see cwdInRoot), when it is inside.
 */
function toContractPath(root: string, typed: string, flag: string, base?: string): string {
  let p: string;
  if (base !== undefined && sep === '/' && PLAIN_RELATIVE.test(typed) && !typed.endsWith('/')) {
    // the common case, thousands of times per mint: no resolve()/relative() per path
    p = base === '' ? typed : `${base}/${typed}`;
  } else {
    const abs = resolve(process.cwd(), typed);
    const rel = relative(root, abs);
    if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
      throw new UsageError('EGJ_BAD_PATH', `${typed}: ${flag} must be inside the repository root ${root}`);
    }
    p = rel.split(sep).join('/');
  }
  const problem = pathProblem(p);
  if (problem) throw new UsageError('EGJ_BAD_PATH', `${typed}: ${problem}`);
  return p;
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw IoError.wrap('lstat', path, err);
  }
}

/** The working directory relative to the root ('' at the root), or undefined when it is outside. */
function cwdInRoot(root: string): string | undefined {
  const rel = relative(root, process.cwd());
  if (rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) return undefined;
  return rel.split(sep).join('/');
}

/**
 * Every ancestor directory of `p` exists as a real directory (or not at all). `checked` holds the
 * directories already found to be real ones, so many files in one directory cost one lstat of it.
 */
function checkAncestors(root: string, p: string, typed: string, checked: Set<string>): void {
  for (const dir of ancestors(p)) {
    if (checked.has(dir)) continue;
    const st = lstatOrNull(resolve(root, dir));
    if (st === null) return; // the rest does not exist either
    if (st.isSymbolicLink())
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${typed}: ${dir} is a symlink; genjob never writes through links`,
      );
    if (!st.isDirectory()) throw new UsageError('EGJ_BAD_PATH', `${typed}: ${dir} is not a directory`);
    checked.add(dir);
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
    const buf = Buffer.alloc(SECRET_HEAD_BYTES);
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
      text = readText(o.file === '-' ? 0 : o.file); // -f - reads stdin, like git commit -F -
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
  const here = cwdInRoot(root);
  const contractPath = (typed: string, flag: string) => toContractPath(root, typed, flag, here);
  const allowed = new Set((o.allowSecret ?? []).map((p) => contractPath(p, '--allow-secret')));
  const creates = (o.create ?? []).map((typed) => ({ typed, path: contractPath(typed, '--create') }));
  const reads = o.paths.map((typed) => ({ typed, path: contractPath(typed, 'a path') }));
  if (reads.length + creates.length === 0)
    throw new UsageError('EGJ_USAGE', 'name at least one file the generator may change (or --create one)');

  const instructionFinding = (await scanSecretText(instruction))[0];
  if (instructionFinding)
    throw instructionSecretError(
      o.file ?? 'the instruction (-m)',
      instructionFinding.rule,
      instructionFinding.line,
    );

  const realDirs = new Set<string>();
  for (const { typed, path } of [...reads, ...creates]) {
    checkAncestors(root, path, typed, realDirs);
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
  // (a shared index, not Array#shift: shifting 2,000 paths one by one moves ~2 million elements)
  let taken = 0;
  const workers = Array.from({ length: Math.min(8, reads.length) }, async () => {
    for (let next = reads[taken++]; next; next = reads[taken++])
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
  const scanner = allowSecret.has(input.path)
    ? undefined
    : createSecretScanner({ path: input.path, size: st.size });
  const onChunk = scanner ? (c: Buffer) => scanner.push(c) : undefined;
  let sha256: string;
  try {
    ({ sha256 } =
      st.size <= SMALL_FILE_BYTES ? hashSmallFileSync(abs, onChunk) : await hashFile(abs, onChunk));
  } catch (err) {
    throw isSystemError(err) ? IoError.wrap('read', abs, err) : err;
  }
  const finding = (await scanner?.end())?.findings[0];
  if (finding) throw secretError(input.typed, finding.rule, finding.line);
  return { path: input.path, sha256 };
}
