// Compare the workspace after the generator ran with the bundle it started from.
// Changed or created regular files at allowed paths become outputs; one the generator made executable
// says so (every file of the bundle is extracted without an executable bit, so any bit is its doing).
// Anything else — a file outside the contract, a deleted allowed file, a changed or deleted read-only
// file (the job's reads), a symlink, a device, a stray directory — makes the attempt `rejected` with a
// reason naming the path. Nothing is followed through links: the walk goes through descriptors held
// from before the generator ran (workspace-handle.ts), and an output's size is checked from its inode
// before a byte of it is read.
// A file the extraction wrote and nothing touched since keeps its extraction digest unhashed: its
// (ino, size, mtime, ctime) are unchanged and its ctime is older than a fence file written after the
// extraction. User space cannot set ctime (every write, chmod, utimes or rename moves it to "now"),
// and the fence rules out a change within the same clock tick (git's "racy" case). Others are hashed.
import { type BigIntStats, type Dirent, lstatSync } from 'node:fs';
import { join } from 'node:path';
import { ioErrorAt } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { ancestors } from '../core/paths.js';
import { nodeFs } from '../store/fs-port.js';
import { type FileDigest, hashHandle } from '../store/hash-file.js';
import { type HeldDir, HeldWorkspace, WorkspaceSwapError } from './workspace-handle.js';

export interface Output {
  path: string;
  sha256: string;
  bytes: number;
  /** The generator made the file executable (the bundle's files never are). */
  executable?: true;
}

export type DiffResult = { ok: true; outputs: Output[] } | { ok: false; reason: string };

/** A file as the extraction left it: its digest and the stat that shows it is still those bytes. */
interface KnownFile {
  sha256: string;
  bytes: number;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/** The extracted files, stat'ed before the generator ran, and the fence's ctime (see the header). */
export interface KnownFiles {
  files: ReadonlyMap<string, KnownFile>;
  fenceCtimeNs: bigint;
}

/**
 * Record the extraction's files (path, sha256, bytes as it hashed them while writing) with their stat,
 * then write `fenceFile`. Call after the extraction and before the generator runs.
 */
export function knownFiles(
  ws: string,
  extracted: ReadonlyArray<{ path: string; sha256: string; bytes: number }>,
  fenceFile: string,
): KnownFiles {
  const files = new Map<string, KnownFile>();
  for (const f of extracted) {
    const st = lstatSync(join(ws, f.path), { bigint: true });
    if (!st.isFile() || st.size !== BigInt(f.bytes)) continue; // not as extracted: hash it later
    const { ino, size, mtimeNs, ctimeNs } = st;
    files.set(f.path, { sha256: f.sha256, bytes: f.bytes, ino, size, mtimeNs, ctimeNs });
  }
  // a fresh create: its ctime is "now"; through the named fs, so a full disk is EGJ_IO naming the fence
  nodeFs.closeSync(nodeFs.openSync(fenceFile, 'wx', 0o600));
  return { files, fenceCtimeNs: lstatSync(fenceFile, { bigint: true }).ctimeNs };
}

/** The extraction's digest when `st` (lstat'ed in the workspace) is provably the file it wrote, else null. */
function unchanged(st: BigIntStats, path: string, known: KnownFiles | undefined): FileDigest | null {
  const k = known?.files.get(path);
  if (k === undefined) return null;
  const same =
    st.isFile() &&
    st.ino === k.ino &&
    st.size === k.size &&
    st.mtimeNs === k.mtimeNs &&
    st.ctimeNs === k.ctimeNs &&
    st.ctimeNs < known!.fenceCtimeNs;
  return same ? { sha256: k.sha256, bytes: k.bytes } : null;
}

function kindOf(d: Dirent): string {
  if (d.isSymbolicLink()) return 'a symlink';
  if (d.isFIFO()) return 'a FIFO';
  if (d.isSocket()) return 'a socket';
  if (d.isCharacterDevice() || d.isBlockDevice()) return 'a device';
  return 'an unknown file type';
}

/**
 * Diff the workspace held open since before the generator ran (a path is opened here, for a workspace
 * nothing else could have changed). A workspace or directory swapped for a link is a rejection.
 */
export async function diffWorkspace(
  ws: string | HeldWorkspace,
  job: Job,
  known?: KnownFiles,
): Promise<DiffResult> {
  const root = typeof ws === 'string' ? HeldWorkspace.open(ws) : ws;
  try {
    const swapped = root.swapped();
    if (swapped !== null) return { ok: false, reason: swapped };
    return await diffHeld(root, job, known);
  } catch (err) {
    if (err instanceof WorkspaceSwapError) return { ok: false, reason: err.message };
    throw err;
  } finally {
    if (typeof ws === 'string') root.close();
  }
}

async function diffHeld(root: HeldWorkspace, job: Job, known?: KnownFiles): Promise<DiffResult> {
  const inputs = new Map(job.inputs.map((i) => [i.path, i.sha256]));
  const reads = new Map((job.reads ?? []).map((r) => [r.path, r.sha256]));
  const dirs = new Set([...job.inputs, ...(job.reads ?? [])].flatMap((i) => ancestors(i.path)));
  const seen = new Set<string>();
  const outputs: Output[] = [];
  let total = 0;

  async function walk(dir: HeldDir, rel: string): Promise<string | null> {
    for (const d of dir.entries()) {
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) {
        if (!dirs.has(path)) return `created directory ${JSON.stringify(path)} outside the allowed paths`;
        const sub = dir.dir(d.name);
        const problem = await walk(sub, path).finally(() => sub.close());
        if (problem) return problem;
      } else if (d.isFile() && reads.has(path)) {
        seen.add(path);
        const st = dir.lstat(d.name);
        const { sha256 } = unchanged(st, path, known) ?? (await hashHeld(dir, d.name, st.ino));
        if (sha256 !== reads.get(path))
          return `changed ${JSON.stringify(path)}, which the job ships read-only (--read): it is never an output`;
      } else if (d.isFile()) {
        if (!inputs.has(path)) return `wrote ${JSON.stringify(path)}, which is outside the allowed paths`;
        seen.add(path);
        const st = dir.lstat(d.name);
        if (st.size > BigInt(job.constraints.max_file_bytes))
          return `${JSON.stringify(path)} is ${st.size} bytes, over the job's max_file_bytes`;
        const { sha256, bytes } = unchanged(st, path, known) ?? (await hashHeld(dir, d.name, st.ino));
        if (bytes > job.constraints.max_file_bytes)
          return `${JSON.stringify(path)} is ${bytes} bytes, over the job's max_file_bytes`;
        total += bytes;
        if (total > job.constraints.max_total_bytes) return `outputs exceed the job's max_total_bytes`;
        if (sha256 !== inputs.get(path))
          outputs.push({
            path,
            sha256,
            bytes,
            ...((st.mode & 0o111n) !== 0n ? { executable: true } : {}),
          });
      } else {
        return `${JSON.stringify(path)} is ${kindOf(d)}; only regular files may be outputs`;
      }
    }
    return null;
  }

  const problem = await walk(root, '');
  if (problem) return { ok: false, reason: problem };
  for (const [path, sha] of inputs) {
    if (sha !== null && !seen.has(path))
      return {
        ok: false,
        reason: `deleted allowed file ${JSON.stringify(path)}; genjob does not apply deletions`,
      };
  }
  for (const path of reads.keys())
    if (!seen.has(path))
      return { ok: false, reason: `deleted ${JSON.stringify(path)}, which the job ships read-only (--read)` };
  outputs.sort((a, b) => (a.path < b.path ? -1 : 1));
  return { ok: true, outputs };
}

async function hashHeld(dir: HeldDir, name: string, ino: bigint): Promise<FileDigest> {
  const fh = await dir.file(name, ino);
  try {
    return await hashHandle(fh);
  } catch (err) {
    throw ioErrorAt(`${dir.path}/${name}`, err); // a descriptor's read error names no file
  } finally {
    await fh.close();
  }
}
