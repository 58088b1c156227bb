// Hash many files at once. sha256 runs on the thread that calls update(), so one thread hashes
// at ~1.6 GB/s whatever the disk; for large sets the files are spread over worker threads (one
// per core, biggest file first to the least-loaded worker) so verify uses every core.
// Small sets are hashed in-process: a worker costs ~30 ms to start.
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ioErrorAt } from '../core/errors.js';
import { type FileDigest, hashFile } from './hash-file.js';

/** Below this many bytes in all, threads cost more than they save. */
export const PARALLEL_MIN_BYTES = 64 * 1024 * 1024;

// Runs in a worker (CommonJS, eval'd): the same reads as hashFile — O_NOFOLLOW, 1 MiB chunks.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { openSync, readSync, closeSync, constants } = require('node:fs');
const { createHash } = require('node:crypto');
const buf = Buffer.allocUnsafe(1 << 20);
const out = [];
let failed;
for (const path of workerData) {
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const hash = createHash('sha256');
      let bytes = 0;
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, null);
        if (n === 0) break;
        hash.update(buf.subarray(0, n));
        bytes += n;
      }
      out.push({ sha256: hash.digest('hex'), bytes });
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    failed = { path, syscall: err.syscall, code: err.code, errno: err.errno, message: err.message };
    break;
  }
}
parentPort.postMessage(failed ? { failed } : { digests: out });
`;

/** What a worker posts: its digests, or the first file it could not hash (an error's fields, to name it). */
type WorkerAnswer =
  | { digests: FileDigest[] }
  | { failed: { path: string; syscall?: string; code?: string; errno?: number; message: string } };

function runWorker(paths: string[]): Promise<FileDigest[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: paths });
    worker.once('message', (a: WorkerAnswer) => {
      if ('digests' in a) resolve(a.digests);
      else reject(ioErrorAt(a.failed.path, Object.assign(new Error(a.failed.message), a.failed)));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`hash worker exited with code ${code}`));
    });
  });
}

/** The digests of `paths`, in order. Symlinks are never followed (ELOOP), as in hashFile. */
export async function hashFiles(
  paths: readonly string[],
  threads = availableParallelism(),
): Promise<FileDigest[]> {
  const sizes = paths.map((p) => statSync(p).size);
  const total = sizes.reduce((a, b) => a + b, 0);
  const n = Math.min(threads, paths.length);
  if (n < 2 || total < PARALLEL_MIN_BYTES) {
    const out: FileDigest[] = [];
    for (const p of paths) out.push(await hashFile(p));
    return out;
  }
  const shares = Array.from({ length: n }, () => ({ bytes: 0, items: [] as number[] }));
  const order = paths.map((_, i) => i).sort((a, b) => sizes[b]! - sizes[a]!);
  for (const i of order) {
    const least = shares.reduce((a, b) => (b.bytes < a.bytes ? b : a));
    least.items.push(i);
    least.bytes += sizes[i]!;
  }
  const results = await Promise.all(shares.map((s) => runWorker(s.items.map((i) => paths[i]!))));
  const out: FileDigest[] = new Array(paths.length);
  shares.forEach((s, w) => {
    s.items.forEach((i, j) => {
      out[i] = results[w]![j]!;
    });
  });
  return out;
}
