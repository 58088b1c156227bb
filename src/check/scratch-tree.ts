// The scratch tree a checker runs on: HEAD's tracked files with the job's verified outputs written in,
// nothing else of the working tree (no untracked files, no local edits, no .git). A private index in
// .gen/staging/.check-<pid>-<start>-*/ is read from HEAD, the outputs' blobs are put in it (their
// bytes as verified, mode kept from HEAD), and write-tree names the result: `base_tree` is HEAD's
// tree and `result_tree` this one, both git tree ids. Each run gets its own fresh copy
// (checkout-index; the first one checked out by the same sh that wrote the tree, and taken by one run
// alone), so what one attempt leaves behind never reaches the next; a setup's copy holds HEAD
// and only the outputs its digest pins (setupCopy), as its result is shared. The index and the new
// objects (the outputs' blobs, the result tree) stay in that private directory, outside every copy and
// outside the repository's own object store (read through it as an alternate): the checked code cannot
// change what the next copy is made from, and checking leaves the repository as it was.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConflictError, errnoOf, GitFailedError, ioErrorAt, UsageError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { pathExists } from '../core/path-exists.js';
import type { ReceiptOutput } from '../core/receipt.js';
import { sha256Hex } from '../core/sha256.js';
import { batchInput, catFile, type GitObject, parseBatch } from '../git/cat-file.js';
import { knownCommonDir } from '../git/repository-dirs.js';
import { git, gitSteps } from '../git/run-git.js';
import { thisProcess } from '../store/process-identity.js';
import { removeTree } from '../store/remove-tree.js';
import type { Store } from '../store/store.js';

export const CHECK_STAGING_PREFIX = '.check-';

export interface Scratch {
  /** The private directory: the index, the new objects, and one directory per run. */
  dir: string;
  /** GIT_INDEX_FILE and the object directories of every git command on the scratch index. */
  env: Record<string, string>;
  head: string;
  baseTree: string;
  resultTree: string;
  /** Every tracked path of the result tree. */
  tracked: string[];
  /** A copy of the result tree no run has taken yet (checkoutCopy), or null. */
  spare: string | null;
  /** The mode of the directories on the way to a run's copy: 0711 when a sandbox user must reach it. */
  mode: number;
}

/** Quote a path for update-index --index-info (paths passed pathProblem: no control characters). */
function quote(path: string): string {
  return `"${path.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Where a verified output's bytes are: out/<key>/<path>, or objects/<sha256> when out/ keeps a manifest. */
export function outputFile(store: Store, key: string, o: { path: string; sha256: string }): string {
  const out = join(store.layout.outDir(key), ...o.path.split('/'));
  return pathExists(out) ? out : store.layout.object(o.sha256);
}

/** HEAD's commit and its tree, and the repository's object directory the scratch index reads through. */
export interface HeadIds {
  head: string;
  baseTree: string;
  objects: string;
}

/**
 * HEAD's commit and tree ids and the repository's object directory, from one rev-parse, which also names
 * the common git directory for the checkers' masks (repository-dirs.ts: one git less per check).
 */
export async function headIds(root: string): Promise<HeadIds> {
  // the trailing `--` says both arguments are revisions; rev-parse echoes it, which marks the output whole
  const args = [
    'rev-parse',
    '--path-format=absolute',
    '--git-path',
    'objects',
    '--git-common-dir',
    'HEAD^{commit}',
    'HEAD^{tree}',
    '--',
  ];
  const r = await git(root, args, { okCodes: [128] });
  // git's failure for any other reason than a HEAD without a commit (a disk that failed under it) is its own
  if (r.code !== 0 && !/bad revision|unknown revision/.test(r.stderr))
    throw new GitFailedError(args, r.code, r.stderr);
  // from the end: the two directories' paths are the only lines that may themselves hold a newline
  const lines = r.stdout.toString('utf8').split('\n');
  const [tree, head] = [lines.at(-3), lines.at(-4)];
  if (r.code !== 0 || lines.at(-2) !== '--' || !head || !tree)
    throw new UsageError(
      'EGJ_CHECK_NO_HEAD',
      `${root}: no commit at HEAD; a check runs on HEAD's tracked files, so commit first`,
    );
  const { objects, common } = objectsAndCommon(args, lines.slice(0, -4).join('\n'));
  knownCommonDir(root, common);
  return { head, baseTree: tree, objects };
}

/**
 * Split `<objects>\n<common>` as rev-parse printed them. The object directory is the common directory's
 * objects/ (git is given no GIT_OBJECT_DIRECTORY: run-git.ts), which tells where the first path ends
 * even when a path holds a newline.
 */
function objectsAndCommon(args: readonly string[], text: string): { objects: string; common: string } {
  const half = (text.length - '/objects\n'.length) / 2;
  const common = text.slice(text.length - half);
  if (!Number.isInteger(half) || half <= 0 || text !== `${common}/objects\n${common}`)
    throw new GitFailedError(args, 0, `unexpected object and common directories: ${JSON.stringify(text)}`);
  return { objects: `${common}/objects`, common };
}

/** Exit 4 unless HEAD holds every input of the job with the digest it was minted with (or lacks it). */
export async function requireInputsAtHead(root: string, head: string, job: Job): Promise<void> {
  const specs = inputSpecs(head, job);
  inputsHeld(job, await catFile(root, specs, { contents: true }));
}

/** The object names of the job's inputs at `head`, in the job's order. */
function inputSpecs(head: string, job: Job): string[] {
  return job.inputs.map((i) => `${head}:${i.path}`);
}

/** EGJ_STALE unless `objects` (cat-file of inputSpecs) hold every input with the digest it was minted with. */
function inputsHeld(job: Job, objects: ReadonlyArray<GitObject | null>): void {
  for (const [i, input] of job.inputs.entries()) {
    const o = objects[i];
    const now =
      o === null || o === undefined ? null : o.type === 'blob' && o.content ? sha256Hex(o.content) : o.type;
    if (now === input.sha256) continue;
    const held =
      now === null
        ? 'does not hold it'
        : now.length === 64
          ? `holds sha256 ${now.slice(0, 12)}`
          : `holds a ${now}`;
    const minted =
      input.sha256 === null ? 'absent (a file to create)' : `sha256 ${input.sha256.slice(0, 12)}`;
    throw new ConflictError(
      'EGJ_STALE',
      `${input.path}: HEAD ${held}, the job ${job.key.slice(0, 12)} was minted on ${minted}; check it on the commit it was minted on, or mint it again from HEAD`,
    );
  }
}

/** The spare copy's place in a scratch directory, before a run takes it (checkoutCopy). */
const SPARE = 'spare';

/**
 * Build the private index of `at` (HEAD as read once for the whole command: every job of one `check` is
 * checked on the same commit, the one its records' digests name) plus the outputs, and the tree ids.
 * With `spare`, the first copy a run will take (checkoutCopy) is checked out of it too, by the same git
 * that wrote the tree; without, nothing is checked out yet (a judge reads no copy).
 */
export async function prepareScratch(
  store: Store,
  at: HeadIds,
  job: Job,
  outputs: readonly ReceiptOutput[],
  opts: { spare?: boolean; searchable?: boolean } = {},
): Promise<Scratch> {
  const root = store.root;
  const { head, baseTree, objects } = at;
  // where each output's verified bytes are, looked up before anything starts: a disk that fails here
  // leaves nothing running that would outlive the scratch directory
  const outputFiles = outputs.map((o) => outputFile(store, job.key, o));
  const specs = inputSpecs(head, job);
  const input = batchInput(specs);
  const { pid, start } = thisProcess();
  mkdirSync(store.layout.staging, { recursive: true });
  const dir = join(
    store.layout.staging,
    `${CHECK_STAGING_PREFIX}${pid}-${start}-${randomBytes(6).toString('hex')}`,
  );
  // searchable (not listable) by others when a sandbox user's copies lie beneath (sandbox-user.ts)
  const mode = opts.searchable ? 0o711 : 0o700;
  mkdirSync(dir, { mode });
  if (opts.searchable) chmodSync(dir, mode); // whatever the umask
  try {
    const own = join(dir, 'objects');
    mkdirSync(own);
    const env = {
      GIT_INDEX_FILE: join(dir, 'index'),
      GIT_OBJECT_DIRECTORY: own,
      GIT_ALTERNATE_OBJECT_DIRECTORIES: objects,
    };
    const paths = join(dir, 'outputs');
    try {
      if (outputs.length > 0) writeFileSync(paths, `${outputFiles.join('\n')}\n`, { mode: 0o600 });
    } catch (err) {
      throw ioErrorAt(paths, err); // a write that fails names no file of its own
    }
    // in one sh: the inputs as HEAD holds them (cat-file, reading the sh's stdin), HEAD's tracked files
    // with their modes (an output keeps its file's mode, and is tracked after it), and the outputs' blobs,
    // written into the private object directory (hash-object, reading the list of their files): cat-file's
    // objects, then hash-object's one line per output, then ls-files' entries. Every step ends before the
    // directory may be removed, and a stale input is the first thing told.
    const listed = await gitSteps(
      root,
      [
        ...(specs.length === 0 ? [] : [['cat-file', '--batch']]),
        ['read-tree', head],
        ...(outputs.length === 0
          ? []
          : [{ args: ['hash-object', '-w', '--no-filters', '--stdin-paths'], stdinFile: paths }]),
        ['ls-files', '-s', '-z'],
      ],
      { env, input: specs.length === 0 ? '' : input },
    );
    const held = parseBatch(listed.stdout, specs, true);
    inputsHeld(job, held.objects);
    const { oids, modes } = blobsThenModes(listed.stdout, held.end, outputs.length);
    const entries = outputs
      .map((o, i) => `${modes.get(o.path) === '100755' ? '100755' : '100644'} ${oids[i]}\t${quote(o.path)}\n`)
      .join('');
    // the outputs into the index, the result tree named and, when asked, the spare copy checked out, in
    // one sh again
    const spare = opts.spare ? scratchDirs(dir, `${SPARE}/tree`) : null;
    const written = await gitSteps(
      root,
      [
        ...(outputs.length === 0 ? [] : [['update-index', '--index-info']]),
        ['write-tree'],
        ...(spare === null ? [] : [checkoutAll(spare)]),
      ],
      { env, input: entries },
    );
    const resultTree = written.stdout.toString('utf8').replace(/\n$/, '');
    const tracked = [...new Set([...modes.keys(), ...outputs.map((o) => o.path)])];
    return { dir, env, head, baseTree, resultTree, tracked, spare, mode };
  } catch (err) {
    removeScratch(dir);
    throw err;
  }
}

/** checkout-index of the whole private index into `tree`. */
const checkoutAll = (tree: string) => ['checkout-index', '-a', '-f', `--prefix=${tree}/`];

/**
 * `count` lines of hash-object (one blob id per output) from offset `at` of `stdout`, followed by
 * `ls-files -s -z` of the private index (HEAD's paths with their modes, the outputs not yet written in),
 * as one sh printed them.
 */
function blobsThenModes(
  stdout: Buffer,
  from: number,
  count: number,
): { oids: string[]; modes: Map<string, string> } {
  const oids: string[] = [];
  let at = from;
  for (let i = 0; i < count; i++) {
    const end = stdout.indexOf(10, at);
    const oid = end < 0 ? '' : stdout.toString('latin1', at, end);
    if (!/^[0-9a-f]{40,64}$/.test(oid))
      throw new GitFailedError(['hash-object'], 0, `line ${i + 1}: not a blob id: ${JSON.stringify(oid)}`);
    oids.push(oid);
    at = end + 1;
  }
  const modes = new Map<string, string>();
  for (const entry of stdout.toString('utf8', at).split('\0')) {
    const m = /^(\d+) [0-9a-f]+ \d\t(.*)$/s.exec(entry);
    if (m) modes.set(m[2]!, m[1]!);
  }
  return { oids, modes };
}

/**
 * Make `rel` (a/b/c) under the scratch directory `dir`, one level at a time (an existing level is fine).
 * Not mkdir's recursive mode: when a level fails, that reports the error of the level it tried first
 * (ENOENT for a disk that failed one level up), not the one that failed.
 */
export function scratchDirs(dir: string, rel: string, mode = 0o700): string {
  let at = dir;
  for (const part of rel.split('/')) {
    at = join(at, part);
    try {
      mkdirSync(at, { mode });
      if (mode !== 0o700) chmodSync(at, mode); // whatever the umask
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw ioErrorAt(at, err);
    }
  }
  return at;
}

/**
 * A fresh copy of the result tree in `dir`/`name`/tree; returns the run directory and the tree. The
 * scratch's spare copy (checked out when the tree was written, and never run in) is taken when it is still
 * there, by one rename; otherwise the private index is checked out again.
 */
export async function checkoutCopy(
  root: string,
  scratch: Scratch,
  name: string,
): Promise<{ runDir: string; tree: string }> {
  const runDir = join(scratch.dir, name);
  const spare = scratch.spare;
  if (spare !== null) {
    scratch.spare = null; // taken by this run alone, whatever runs beside it
    scratchDirs(scratch.dir, name, scratch.mode);
    const tree = join(runDir, 'tree');
    try {
      renameSync(spare, tree);
    } catch (err) {
      throw ioErrorAt(tree, err);
    }
    return { runDir, tree };
  }
  const tree = scratchDirs(scratch.dir, `${name}/tree`, scratch.mode);
  await git(root, checkoutAll(tree), { env: scratch.env });
  return { runDir, tree };
}

/**
 * A fresh copy for a checker's `setup` in `dir`/`name`/tree: HEAD's tracked files and, of the job's
 * outputs, only those at `pinned` paths (the files the setup's digest covers), as the result tree holds
 * them. Setup's result is shared by every job with the same digest, so no other generated byte may run in
 * it or shape it. Returns the run directory, the tree and the paths the copy tracks.
 */
export async function setupCopy(
  root: string,
  scratch: Scratch,
  name: string,
  pinned: readonly string[],
): Promise<{ runDir: string; tree: string; tracked: string[] }> {
  const runDir = join(scratch.dir, name);
  const tree = scratchDirs(scratch.dir, `${name}/tree`, scratch.mode);
  // its own index, beside the run directory (outside what the sandbox can write)
  const env = { ...scratch.env, GIT_INDEX_FILE: `${runDir}.index`, GIT_LITERAL_PATHSPECS: '1' };
  const read = ['read-tree', scratch.head];
  // the pinned outputs as the result tree holds them, read once HEAD is in the index
  const held =
    pinned.length === 0
      ? Buffer.alloc(0)
      : (await gitSteps(root, [read, ['ls-tree', '-z', scratch.resultTree, '--', ...pinned]], { env }))
          .stdout;
  const listed = await gitSteps(
    root,
    [
      ...(pinned.length === 0 ? [read] : []),
      ...(held.length > 0 ? [['update-index', '-z', '--index-info']] : []),
      ['checkout-index', '-a', '-f', `--prefix=${tree}/`],
      ['ls-files', '-z'],
    ],
    { env, input: held },
  );
  const tracked = listed.stdout
    .toString('utf8')
    .split('\0')
    .filter((p) => p !== '');
  return { runDir, tree, tracked };
}

export function removeScratch(dir: string): void {
  removeTree(dir);
}
