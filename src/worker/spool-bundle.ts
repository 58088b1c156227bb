// The bundle is built completely before its first byte leaves: every input is opened beneath the
// repository root (no link followed in any component), hashed in full and compared with the job's
// digest while it is written to a private spool file (O_EXCL, 0600, in .gen/staging). A mismatch
// throws before anything is sent, and what is sent is the spool, so an edit after the check cannot
// reach the host. Equal digests mean the bytes are the ones mint secret-scanned (or was told to allow).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { IoError, ioErrorAt } from '../core/errors.js';
import { type Job, shippedFiles } from '../core/job.js';
import { jobFileBytes } from '../store/mint-job.js';
import type { Store } from '../store/store.js';
import { type PackedFile, packTar } from '../transport/tar-pack.js';

const CHUNK = 1024 * 1024;
/** Spool writes (1 MiB each) allowed to run while packing goes on. */
const MAX_WRITES_IN_FLIGHT = 4;

export interface SpooledBundle {
  packed: PackedFile[];
  bytes: number;
  /** The spooled bundle, chunk by chunk, to send. */
  chunks(): AsyncGenerator<Buffer>;
  discard(): Promise<void>;
}

/** Pack job.json, every existing input and every read into a spool file; InputChangedError (or not regular) on any mismatch. */
export async function spoolBundle(store: Store, job: Job): Promise<SpooledBundle> {
  const path = join(
    store.layout.staging,
    `bundle-${job.key.slice(0, 16)}-${randomBytes(6).toString('hex')}.tar`,
  );
  let fh: FileHandle;
  try {
    fh = await open(path, 'wx+', 0o600);
  } catch (err) {
    throw new IoError('create spool file', path, err);
  }
  const discard = async () => {
    await fh.close().catch(() => {});
    rmSync(path, { force: true });
  };
  try {
    let bytes = 0;
    // a chunk handed over is never touched again (packTar), so its write need not finish before the
    // next file bytes are read and hashed: up to MAX_WRITES_IN_FLIGHT writes overlap that work
    const writing = new Set<Promise<void>>();
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
      async (chunk) => {
        if (writing.size >= MAX_WRITES_IN_FLIGHT) await Promise.race(writing);
        const done: Promise<void> = fh.write(chunk, 0, chunk.length, bytes).then(
          () => {
            writing.delete(done);
          },
          (err: unknown) => {
            throw ioErrorAt(path, err); // an fd's error names no file
          },
        );
        done.catch(() => {}); // awaited below; a failure is thrown there, never unhandled
        writing.add(done);
        bytes += chunk.length;
      },
    );
    await Promise.all(writing);
    return {
      packed,
      bytes,
      async *chunks() {
        for (let at = 0; at < bytes; ) {
          // a fresh buffer per chunk: the writer may still hold the last one, and copying it cost a
          // second memcpy of the whole bundle
          const buf = Buffer.allocUnsafe(Math.min(CHUNK, bytes - at));
          const { bytesRead } = await fh.read(buf, 0, buf.length, at).catch((err: unknown) => {
            throw ioErrorAt(path, err);
          });
          if (bytesRead === 0) throw new IoError('read', path, new Error('spool file shrank'));
          at += bytesRead;
          yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
        }
      },
      discard,
    };
  } catch (err) {
    await discard();
    throw err;
  }
}
