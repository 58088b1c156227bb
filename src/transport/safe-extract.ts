// Extract an untrusted tar (plain or gzip) into a fresh 0700 staging directory, all or nothing.
// feedArchive → TarReader (framing, pax, end of archive; regular files only) → EntryPolicy (paths,
// allowed set, duplicates, twins, caps) → StagingWriter (O_EXCL|O_NOFOLLOW, hashed, fsynced before
// return) or memory. Each stage throws on the first violation; the catch below then deletes the staging
// directory, so a rejected archive leaves nothing behind and the caller sees ArchiveRejectedError.
//
// Decisions: directory entries are refused (parents are made implicitly, 0755); after the two zero
// blocks at most 64 KiB of zero padding may follow (any other trailing byte is refused); gzip is the
// only compression read (zstd, xz, bzip2 fail as not-a-tar); in-memory entries count toward
// maxEntries and maxTotalBytes; on rejection the source is not drained (drop the connection).

import { rmSync } from 'node:fs';
import { GenjobError, UsageError } from '../core/errors.js';
import { EntryPolicy } from './entry-policy.js';
import { feedArchive } from './feed-archive.js';
import { rejectArchive } from './reject-archive.js';
import { makeStaging, StagingWriter } from './staging-writer.js';
import { type EntrySink, TarReader } from './tar-reader.js';

export interface ExtractOptions {
  /** A directory on the target filesystem; a fresh mkdtemp (0700) is made inside it. */
  stagingParent: string;
  /** Every file entry must be prefix + contract path, e.g. 'files/'. */
  prefix: string;
  /** Exact entry names read into memory instead of written (name → max bytes); they come first. */
  inMemory?: Record<string, number>;
  /** Contract paths allowed; the function form is called once, at the first prefixed entry or the end. */
  allowed: ReadonlySet<string> | ((inMemory: Map<string, Buffer>) => ReadonlySet<string>);
  maxEntries: number;
  maxFileBytes: number;
  maxTotalBytes: number;
  /** Max decompressed / compressed bytes for gzip input; default 200. */
  maxRatio?: number;
  /**
   * fsync every file and directory before returning (default true). false only for a scratch
   * workspace that is deleted when the request ends: a crash loses it either way, and the fsyncs
   * were most of the time of a bundle with many files (docs/performance.md).
   */
  sync?: boolean;
}

export interface Extracted {
  /** The staging directory; files sit at dir/<contract path>. The caller moves or removes it. */
  dir: string;
  files: Array<{ path: string; sha256: string; bytes: number }>;
  inMemory: Map<string, Buffer>;
}

const DEFAULT_RATIO = 200;

/** Collect an in-memory entry of `size` bytes into `into` once all of it has arrived. */
function memorySink(into: Map<string, Buffer>, name: string, size: number): EntrySink {
  const buf = Buffer.alloc(size);
  let at = 0;
  return {
    write: (data) => {
      data.copy(buf, at);
      at += data.length;
    },
    end: () => {
      into.set(name, buf);
    },
  };
}

/** Run one parser step: whatever a hostile archive makes the parser throw is the archive's fault, never a bug. */
function parsing(step: () => void): void {
  try {
    step();
  } catch (err) {
    if (err instanceof GenjobError) throw err;
    rejectArchive('EGJ_ARCHIVE_CORRUPT', undefined, `unreadable: ${(err as Error)?.message ?? err}`, err);
  }
}

/** Extract `source` under opts.stagingParent; see the module header for every rule. */
export async function safeExtract(
  source: AsyncIterable<Uint8Array>,
  opts: ExtractOptions,
): Promise<Extracted> {
  if (opts.prefix !== '' && !opts.prefix.endsWith('/')) {
    throw new UsageError(
      'EGJ_EXTRACT_PREFIX',
      `extract prefix ${JSON.stringify(opts.prefix)} must be empty or end in /`,
    );
  }
  const dir = makeStaging(opts.stagingParent);
  const inMemory = new Map<string, Buffer>();
  const policy = new EntryPolicy(opts, inMemory);
  const staging = new StagingWriter(dir);
  const reader = new TarReader((name, size) => {
    const admitted = policy.admit(name, size);
    return admitted.kind === 'memory'
      ? memorySink(inMemory, name, size)
      : staging.open(admitted.path, admitted.dirs, size);
  });
  try {
    await feedArchive(source, (chunk) => parsing(() => reader.push(chunk)), opts.maxRatio ?? DEFAULT_RATIO);
    parsing(() => reader.finish());
    policy.allowed(); // the function form runs even when no file entry came: it may refuse the bundle
    if (opts.sync !== false) await staging.sync();
    return { dir, files: staging.files, inMemory };
  } catch (err) {
    try {
      staging.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    throw err;
  }
}
