// Check records on disk: .gen/checks/<key>/<checker>/<sha256>.json, named by the sha256 of their
// bytes. A record is published by exclusive link (temp in .gen/tmp, fsync, link, fsync of the
// directory), so it is never overwritten and a crash leaves it whole or absent; a pulled record with
// the same bytes lands on the same name. Reading, a file whose bytes do not hash to its name, or that
// does not decode, is left out and reported, never trusted.
import { join } from 'node:path';
import { errnoOf, IoError } from '../core/errors.js';
import type { TrustedKey } from '../core/receipt-envelope.js';
import { sha256Hex } from '../core/sha256.js';
import { fsyncDir, publishExclusive, readdirOrEmpty, readIfExists } from '../store/durable.js';
import { assertRealDirs } from '../store/real-dirs.js';
import type { Store } from '../store/store.js';
import { type DecodedRecord, decodeRecord, MAX_CHECK_RECORD_BYTES } from './record.js';
import { CHECKS_DIR, checksDir, recordedCheckers, recordFile } from './record-paths.js';

export { CHECKS_DIR, checksDir, recordedCheckers, recordFile };

/**
 * mkdir of each missing directory from .gen/checks down to `dir`, each new one's parent fsynced; one that
 * is there must be a real directory. `.gen/` can be committed: a branch holding `.gen/checks/<key>/tests`
 * as a symbolic link had `check` write its record wherever the link pointed, outside the repository.
 */
function ensureDirs(store: Store, dirs: readonly string[]): void {
  for (const dir of dirs) {
    try {
      store.fs.mkdirSync(dir);
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
      assertRealDirs(store, [dir], 'check', 'writes');
      continue;
    }
    fsyncDir(store, join(dir, '..'));
  }
}

/** Publish a record's bytes; returns their sha256 (the record's name and digest). Never overwrites. */
export function writeRecord(store: Store, key: string, checker: string, bytes: Buffer): string {
  store.ensure();
  ensureDirs(store, [store.layout.dir(CHECKS_DIR), checksDir(store, key), checksDir(store, key, checker)]);
  const digest = sha256Hex(bytes);
  // false: a record with these very bytes is there already (a pulled copy): the same record
  publishExclusive(store, recordFile(store, key, checker, digest), bytes);
  return digest;
}

export interface StoredRecord extends DecodedRecord {
  digest: string;
  file: string;
}

export interface RecordListing {
  records: StoredRecord[];
  /** Files left out, and why (bytes that do not hash to the name, a record that does not decode). */
  ignored: Array<{ file: string; why: string }>;
}

/** Every record of one job and checker that is what its name says, decoded under the check keys. */
export function listRecords(
  store: Store,
  key: string,
  checker: string,
  trusted: readonly TrustedKey[],
): RecordListing {
  const dir = checksDir(store, key, checker);
  const out: RecordListing = { records: [], ignored: [] };
  for (const name of readdirOrEmpty(store, dir).sort()) {
    const m = /^([0-9a-f]{64})\.json$/.exec(name);
    if (!m) continue;
    const file = join(dir, name);
    let bytes: Buffer | undefined;
    try {
      bytes = readIfExists(store, file, MAX_CHECK_RECORD_BYTES);
    } catch (err) {
      // a disk that failed is no answer: ignoring the record would let an older one (a fail) decide
      if (err instanceof IoError) throw err;
      out.ignored.push({ file, why: (err as Error).message });
      continue;
    }
    if (bytes === undefined) continue;
    if (sha256Hex(bytes) !== m[1]) {
      out.ignored.push({ file, why: 'its bytes do not hash to its name (changed after it was written)' });
      continue;
    }
    try {
      const decoded = decodeRecord(bytes, file, trusted);
      if (decoded.facts.key !== key || decoded.facts.checker !== checker) {
        out.ignored.push({
          file,
          why: `it is a record of ${decoded.facts.checker} for another job or checker`,
        });
        continue;
      }
      out.records.push({ ...decoded, digest: m[1]!, file });
    } catch (err) {
      out.ignored.push({ file, why: (err as Error).message });
    }
  }
  return out;
}
