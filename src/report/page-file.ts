// A report page on disk: read back the digest its last line names (a short read at the end of the file,
// never a parse), and write one: an existing page is replaced by a temp file renamed over it (a reader
// sees the old page or the new one); a new page is created in place, one file creation instead of two;
// several writes are kept in flight (WriteQueue).
// Pages are not fsynced: a report is derived data, and a page torn by a crash lacks its last line, so it
// never matches and the next report writes it again.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, readSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errnoOf, IoError, RecordUnreadableError } from '../core/errors.js';
import { SHA256_HEX } from '../core/sha256.js';
import { nodeFs } from '../store/fs-port.js';
import { thisProcess } from '../store/process-identity.js';
import { openRegularFile } from '../store/read-record.js';
import { FINGERPRINT_PREFIX, fingerprintLine } from './page.js';

/**
 * What a page's temp file is named by: `--out` may name a directory of the user's own, so the sweep of a
 * dead report's temps removes only names no one else would choose.
 */
export const PAGE_TEMP_PREFIX = '.genjob-report-tmp-';
/** A page's temp name: the pid and start time of its writer as groups (sweepStaleTemps reads them). */
export const PAGE_TEMP = /^\.genjob-report-tmp-(\d+)-(\d+)-[0-9a-f]+$/;

const LINE_BYTES = Buffer.byteLength(fingerprintLine('0'.repeat(64)));

/** The digest a page's last line names; null when it names none (not one of ours, torn); undefined: no page. */
export function pageFingerprint(file: string): string | null | undefined {
  if (!existsSync(file)) return undefined;
  let opened: { fd: number; size: number } | undefined;
  try {
    opened = openRegularFile(nodeFs, file); // a link or FIFO is not followed or waited on
  } catch (err) {
    if (err instanceof RecordUnreadableError) return null;
    throw err;
  }
  if (opened === undefined) return undefined;
  const { fd, size } = opened;
  try {
    if (size < LINE_BYTES) return null;
    const tail = Buffer.alloc(LINE_BYTES);
    const n = readSync(fd, tail, 0, LINE_BYTES, size - LINE_BYTES);
    const line = tail.subarray(0, n).toString('utf8');
    const digest = line.slice(FINGERPRINT_PREFIX.length, FINGERPRINT_PREFIX.length + 64);
    return SHA256_HEX.test(digest) && line === fingerprintLine(digest) ? digest : null;
  } catch (err) {
    throw IoError.wrap('read', file, err);
  } finally {
    closeSync(fd);
  }
}

/**
 * Write `file` (`exists`: replace it; else create it, falling back to a replace if it appeared meanwhile).
 * Asynchronous, so a report keeps several file creations in flight: on a busy disk each one waits on the
 * filesystem's journal, and eight at once take about half the time of one after another.
 */
export async function writePage(file: string, dir: string, text: string, exists: boolean): Promise<void> {
  if (!exists) {
    try {
      await writeFile(file, text, { flag: 'wx', mode: 0o644 });
      return;
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') {
        await rm(file, { force: true });
        throw IoError.wrap('write', file, err);
      }
      // made meanwhile (another report): replace it as any existing page
    }
  }
  // pid and start time, so the sweep knows a dead writer's; a prefix of genjob's own, so it knows its own
  const { pid, start } = thisProcess();
  const tmp = join(dir, `${PAGE_TEMP_PREFIX}${pid}-${start}-${randomBytes(6).toString('hex')}`);
  try {
    await writeFile(tmp, text, { flag: 'wx', mode: 0o644 });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw IoError.wrap('write', file, err);
  }
}

/** At most `limit` writes in flight; the first failure is thrown by `drain` once all have settled. */
export class WriteQueue {
  readonly #inflight = new Set<Promise<void>>();
  #failed: { err: unknown } | undefined;

  constructor(readonly limit = 8) {}

  async add(write: () => Promise<void>): Promise<void> {
    while (this.#inflight.size >= this.limit) await Promise.race(this.#inflight);
    if (this.#failed) return; // nothing more once one failed: drain reports it
    const p: Promise<void> = write()
      .catch((err: unknown) => {
        this.#failed ??= { err };
      })
      .finally(() => this.#inflight.delete(p));
    this.#inflight.add(p);
  }

  async drain(): Promise<void> {
    await Promise.all(this.#inflight);
    if (this.#failed) throw this.#failed.err;
  }
}
