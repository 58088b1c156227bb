// The bundle is built completely before its first byte leaves: every input is opened beneath the
// repository root (no link followed in any component), read once, hashed in full and compared with the
// job's digest while it goes into a bounded spool (memory up to the process's cap, then a private temp
// file in .gen/staging: bounded-spool.ts). A mismatch throws before anything is sent, and what is sent
// is the spool, so an edit after the check cannot reach the host. Equal digests mean the bytes are the
// ones mint secret-scanned (or was told to allow).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type Job, shippedFiles } from '../core/job.js';
import { jobFileBytes } from '../store/mint-job.js';
import type { Store } from '../store/store.js';
import { type PackedFile, packTar } from '../transport/tar-pack.js';
import { BoundedSpool, type SpoolBudget } from './bounded-spool.js';

/** The spool's chunks grow to this size: a bundle of 200 MiB is then held in 9 buffers, not 200. */
const SPOOL_CHUNK_BYTES = 64 * 1024 * 1024;

export interface SpooledBundle {
  packed: PackedFile[];
  bytes: number;
  /** The spooled bundle, chunk by chunk, to send. */
  chunks(): AsyncGenerator<Buffer>;
  discard(): Promise<void>;
}

/** Pack job.json, every existing input and every read into a spool; InputChangedError (or not regular) on any mismatch. */
export async function spoolBundle(store: Store, job: Job, budget?: SpoolBudget): Promise<SpooledBundle> {
  const file = join(
    store.layout.staging,
    `bundle-${job.key.slice(0, 16)}-${randomBytes(6).toString('hex')}.tar`,
  );
  const spool = new BoundedSpool(file, budget);
  try {
    // a chunk handed over is never touched again (packTar), so the spool keeps it as it is
    const packed = await packTar(
      [
        { name: 'job.json', bytes: jobFileBytes(job) },
        ...shippedFiles(job).map((i) => ({
          name: `files/${i.path}`,
          file: i.path,
          root: store.root,
          expectSha256: i.sha256,
        })),
      ],
      (chunk) => spool.append(chunk),
      { maxChunkBytes: SPOOL_CHUNK_BYTES },
    );
    await spool.finish();
    return {
      packed,
      bytes: spool.bytes,
      chunks: () => spool.chunks(),
      discard: () => spool.discard(),
    };
  } catch (err) {
    await spool.discard();
    throw err;
  }
}
