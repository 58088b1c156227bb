// Compare the workspace after the generator ran with the bundle it started from.
// Changed or created regular files at allowed paths become outputs. Anything else — a file
// outside the contract, a deleted allowed file, a symlink, a device, a stray directory —
// makes the attempt `rejected` with a reason naming the path. Nothing is followed through links.
import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Job } from '../core/job.js';
import { ancestors } from '../core/paths.js';
import { hashFile } from '../store/hash-file.js';

export interface Output {
  path: string;
  sha256: string;
  bytes: number;
}

export type DiffResult = { ok: true; outputs: Output[] } | { ok: false; reason: string };

function kindOf(d: Dirent): string {
  if (d.isSymbolicLink()) return 'a symlink';
  if (d.isFIFO()) return 'a FIFO';
  if (d.isSocket()) return 'a socket';
  if (d.isCharacterDevice() || d.isBlockDevice()) return 'a device';
  return 'an unknown file type';
}

export async function diffWorkspace(ws: string, job: Job): Promise<DiffResult> {
  const inputs = new Map(job.inputs.map((i) => [i.path, i.sha256]));
  const dirs = new Set(job.inputs.flatMap((i) => ancestors(i.path)));
  const seen = new Set<string>();
  const outputs: Output[] = [];
  let total = 0;

  async function walk(rel: string): Promise<string | null> {
    const entries = await readdir(rel ? join(ws, rel) : ws, { withFileTypes: true });
    for (const d of entries) {
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) {
        if (!dirs.has(path)) return `created directory ${JSON.stringify(path)} outside the allowed paths`;
        const problem = await walk(path);
        if (problem) return problem;
      } else if (d.isFile()) {
        if (!inputs.has(path)) return `wrote ${JSON.stringify(path)}, which is outside the allowed paths`;
        seen.add(path);
        const { sha256, bytes } = await hashFile(join(ws, path));
        if (bytes > job.constraints.max_file_bytes)
          return `${JSON.stringify(path)} is ${bytes} bytes, over the job's max_file_bytes`;
        total += bytes;
        if (total > job.constraints.max_total_bytes) return `outputs exceed the job's max_total_bytes`;
        if (sha256 !== inputs.get(path)) outputs.push({ path, sha256, bytes });
      } else {
        return `${JSON.stringify(path)} is ${kindOf(d)}; only regular files may be outputs`;
      }
    }
    return null;
  }

  const problem = await walk('');
  if (problem) return { ok: false, reason: problem };
  for (const [path, sha] of inputs) {
    if (sha !== null && !seen.has(path))
      return {
        ok: false,
        reason: `deleted allowed file ${JSON.stringify(path)}; genjob does not apply deletions`,
      };
  }
  outputs.sort((a, b) => (a.path < b.path ? -1 : 1));
  return { ok: true, outputs };
}
