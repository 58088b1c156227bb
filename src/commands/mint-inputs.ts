// What mint (and remint) ship: user-typed paths turned into contract paths, every ancestor checked to be
// a real directory, secret-looking paths refused, and each file hashed by streaming and scanned for
// secrets in the same read (inside the root, regular files, no symlinks or hardlinks, not in .gen/ or
// .git/). A file named by several jobs of one fan-out is read once.
import { closeSync, constants, lstatSync, openSync, readSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { isSystemError } from '../core/errno.js';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import type { JobInput } from '../core/job.js';
import { ancestors, pathProblem } from '../core/paths.js';
import { SECRET_HEAD_BYTES, secretPathProblem } from '../secrets/path-rules.js';
import { instructionSecretError, secretError } from '../secrets/refusal.js';
import { createSecretScanner, scanSecretText } from '../secrets/scanner.js';
import { hashFile, hashSmallFileSync, SMALL_FILE_BYTES } from '../store/hash-file.js';

/** A plain relative path: no empty, `.` or `..` segment, so joining it to a directory is the same as resolving it. */
const PLAIN_RELATIVE = /^(?!\/)(?:(?!\.\.?(?:\/|$))[^/]+(?:\/|$))+$/;

/**
 * A user-typed path (relative to the working directory) as a contract path relative to the root.
 * `base` is the working directory relative to the root (see cwdInRoot), when it is inside.
 */
export function toContractPath(root: string, typed: string, flag: string, base?: string): string {
  let p: string;
  if (base !== undefined && sep === '/' && PLAIN_RELATIVE.test(typed) && !typed.endsWith('/')) {
    // the common case, thousands of times per mint: no resolve()/relative() per path
    p = base === '' ? typed : `${base}/${typed}`;
  } else {
    const abs = resolve(process.cwd(), typed);
    const rel = relative(root, abs);
    if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
      // paths are taken from the working directory, not the root: the resolved path says where it looked
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${typed}: ${flag} must be inside the repository root ${root} (it names ${abs}: paths are relative to the current directory)`,
      );
    }
    p = rel.split(sep).join('/');
  }
  const problem = pathProblem(p);
  if (problem) throw new UsageError('EGJ_BAD_PATH', `${typed}: ${problem}`);
  return p;
}

export function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw IoError.wrap('lstat', path, err);
  }
}

/** The working directory relative to the root ('' at the root), or undefined when it is outside. */
export function cwdInRoot(root: string): string | undefined {
  const rel = relative(root, process.cwd());
  if (rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) return undefined;
  return rel.split(sep).join('/');
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

/** Refuse an instruction that looks like it holds a secret; `where` names it (`-f FILE`, `-m`). */
export async function assertNoSecretInInstruction(instruction: string, where: string): Promise<void> {
  const finding = (await scanSecretText(instruction))[0];
  if (finding) throw instructionSecretError(where, finding.rule, finding.line);
}

export interface Typed {
  typed: string;
  path: string;
}

/** Reads the files of one mint: each checked, hashed and scanned once, however many jobs name it. */
export class InputReader {
  /** Directories already found to be real ones, so many files in one directory cost one lstat of it. */
  readonly #realDirs = new Set<string>();
  readonly #read = new Map<string, Promise<JobInput>>();
  readonly #checked = new Set<string>();

  constructor(
    readonly root: string,
    readonly allowSecret: ReadonlySet<string>,
    readonly allowHardlinks: boolean,
  ) {}

  /** Every ancestor is a real directory (or missing), and the path does not look like a secret. */
  check({ typed, path }: Typed): void {
    if (this.#checked.has(path)) return;
    for (const dir of ancestors(path)) {
      if (this.#realDirs.has(dir)) continue;
      const st = lstatOrNull(resolve(this.root, dir));
      if (st === null) break; // the rest does not exist either
      if (st.isSymbolicLink())
        throw new UsageError(
          'EGJ_BAD_PATH',
          `${typed}: ${dir} is a symlink; genjob never writes through links`,
        );
      if (!st.isDirectory()) throw new UsageError('EGJ_BAD_PATH', `${typed}: ${dir} is not a directory`);
      this.#realDirs.add(dir);
    }
    const why = secretPathProblem(path, () => firstBytes(resolve(this.root, path)));
    if (why && !this.allowSecret.has(path)) throw secretError(typed, why);
    this.#checked.add(path);
  }

  /** Whether the path exists (as anything: what it is, read() says). */
  exists(path: string): boolean {
    return lstatOrNull(resolve(this.root, path)) !== null;
  }

  /** A file the generator is to create: it must not exist yet. */
  create(input: Typed): JobInput {
    this.check(input);
    if (this.exists(input.path)) {
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${input.typed}: --create names a file that already exists; list it as a path instead`,
      );
    }
    return { path: input.path, sha256: null };
  }

  /** An existing regular file, hashed (and scanned) once per mint. */
  read(input: Typed): Promise<JobInput> {
    let pending = this.#read.get(input.path);
    if (pending === undefined) {
      this.check(input);
      pending = this.#hash(input);
      this.#read.set(input.path, pending);
    }
    return pending;
  }

  /** Read many with a few reads in flight: many small files are latency-bound. */
  async readAll(inputs: readonly Typed[]): Promise<JobInput[]> {
    const out: JobInput[] = new Array(inputs.length);
    let next = 0;
    const workers = Array.from({ length: Math.min(8, inputs.length) }, async () => {
      for (let i = next++; i < inputs.length; i = next++) out[i] = await this.read(inputs[i]!);
    });
    await Promise.all(workers);
    return out;
  }

  async #hash(input: Typed): Promise<JobInput> {
    const abs = resolve(this.root, input.path);
    const st = lstatOrNull(abs);
    if (st === null)
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${input.typed}: no such file (${abs}; paths are relative to the current directory; use --create for a file the generator should create)`,
      );
    if (st.isSymbolicLink())
      throw new UsageError('EGJ_BAD_PATH', `${input.typed}: is a symlink; genjob only ships regular files`);
    if (!st.isFile()) throw new UsageError('EGJ_BAD_PATH', `${input.typed}: is not a regular file`);
    if (st.nlink > 1 && !this.allowHardlinks) {
      // Another name for the same bytes, possibly outside the repository (a key file, another checkout).
      throw new UsageError(
        'EGJ_BAD_PATH',
        `${input.typed}: has ${st.nlink} hard links; genjob only ships files with one name (pass --allow-hardlinks to ship it anyway)`,
      );
    }
    const scanner = this.allowSecret.has(input.path)
      ? undefined
      : createSecretScanner({ path: input.path, size: st.size });
    const onChunk = scanner ? (c: Buffer) => scanner.push(c) : undefined;
    let sha256: string;
    try {
      ({ sha256 } =
        st.size <= SMALL_FILE_BYTES
          ? hashSmallFileSync(abs, onChunk, st.size)
          : await hashFile(abs, onChunk));
    } catch (err) {
      throw isSystemError(err) ? IoError.wrap('read', abs, err) : err;
    }
    const finding = (await scanner?.end())?.findings[0];
    if (finding) throw secretError(input.typed, finding.rule, finding.line);
    return { path: input.path, sha256 };
  }
}
