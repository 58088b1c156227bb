// Every input is opened beneath the repository root (no link followed in any component), read once,
// hashed in full and compared with the job's digest while it goes into a bounded spool (memory up to the
// process's cap, then a private temp file in .gen/staging: bounded-spool.ts). A file's bytes may leave
// only once its own digest matched: stream() sends checked files while the next ones are read, and a
// mismatch makes it throw, so the sender abandons the bundle (the host then discards all it got). What
// is sent is the spool, so an edit after the check cannot reach the host. Equal digests mean the bytes
// are the ones mint secret-scanned (or was told to allow).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type Job, shippedFiles } from '../core/job.js';
import { jobFileBytes } from '../store/mint-job.js';
import type { Store } from '../store/store.js';
import { type PackedFile, packTar } from '../transport/tar-pack.js';
import { BoundedSpool, type SpoolBudget } from './bounded-spool.js';

/**
 * The chunks the bundle is packed in. Those the spool holds in memory (within its small budget) are kept;
 * past it, each is written to the spool's file and the same memory is packed into again.
 */
const SPOOL_CHUNK_BYTES = 1024 * 1024;

export interface StreamingBundle {
  /**
   * Resolves once job.json and the first input are checked or the bundle is whole (undefined), or
   * with the packing's error if it failed before: then nothing need be sent.
   */
  started: Promise<unknown>;
  /** The bundle as it is checked; throws the packing's error (InputChangedError…) where it failed. */
  stream(): AsyncGenerator<Buffer>;
  /** A chunk stream() gave is written out: its memory may be read into again (BoundedSpool.recycle). */
  recycle(chunk: Buffer): void;
  /** The whole bundle, once every input matched; rejects like packTar. */
  done: Promise<{ packed: PackedFile[]; bytes: number }>;
  discard(): Promise<void>;
}

/** Start packing job.json, every existing input and every read into a spool; see the module header. */
export function streamBundle(store: Store, job: Job, budget?: SpoolBudget): StreamingBundle {
  const file = join(
    store.layout.staging,
    `bundle-${job.key.slice(0, 16)}-${randomBytes(6).toString('hex')}.tar`,
  );
  const spool = new BoundedSpool(file, budget);
  let markStarted: (failed?: unknown) => void = () => {};
  const started = new Promise<unknown>((resolve) => {
    markStarted = resolve;
  });
  // a chunk handed over is never touched again (packTar), so the spool keeps it as it is
  const packing = packTar(
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
    {
      maxChunkBytes: SPOOL_CHUNK_BYTES,
      verified: (upTo, entries) => {
        spool.commit(upTo);
        if (entries >= 2) markStarted(); // job.json and the first input: a bundle whose first input changed sends nothing
      },
    },
  );
  const done = packing.then(
    async (packed) => {
      await spool.finish();
      markStarted();
      return { packed, bytes: spool.bytes };
    },
    (err: unknown) => {
      spool.fail(err);
      markStarted(err);
      throw err;
    },
  );
  done.catch(() => {}); // the caller sees it through stream() or done
  return {
    started,
    stream: () => spool.stream(),
    recycle: (chunk) => spool.recycle(chunk),
    done,
    discard: async () => {
      await done.catch(() => {});
      await spool.discard();
    },
  };
}
