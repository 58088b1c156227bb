// Errors of the tarball layer. A hostile archive is a rejection (exit 3) with one stable code per
// class of violation, so tests and dead-letter records can tell a symlink from a gzip bomb; an input
// file that changed while it was being packed is a conflict (exit 4): re-mint or retry, never ship it.
import { ConflictError, RejectedError, UsageError } from '../core/errors.js';

export const ARCHIVE_CODES = [
  'EGJ_ARCHIVE_LINK', // symbolic link, hard link, GNU long link name
  'EGJ_ARCHIVE_TYPE', // directory, device, FIFO, sparse or unknown entry type
  'EGJ_ARCHIVE_PATH', // entry name fails pathProblem() (absolute, '..', backslash, NUL, ...)
  'EGJ_ARCHIVE_NOT_ALLOWED', // outside the prefix, or a contract path the job does not allow
  'EGJ_ARCHIVE_ORDER', // an in-memory entry (job.json) after the first file entry
  'EGJ_ARCHIVE_DUPLICATE', // the same name twice
  'EGJ_ARCHIVE_TWIN', // two names equal after NFC + lower-casing
  'EGJ_ARCHIVE_FILE_DIR', // a file where another entry needs a directory, or the reverse
  'EGJ_ARCHIVE_TOO_MANY', // more entries than maxEntries
  'EGJ_ARCHIVE_TOO_LARGE', // a header size, the running total or a metadata entry over its cap
  'EGJ_ARCHIVE_TRUNCATED', // the stream ended mid-entry or before the end-of-archive blocks
  'EGJ_ARCHIVE_TRAILING', // non-zero bytes, or too many bytes, after the end-of-archive blocks
  'EGJ_ARCHIVE_CORRUPT', // bad header checksum, malformed pax record, invalid UTF-8, bad gzip
  'EGJ_ARCHIVE_BOMB', // gzip output grew past maxRatio times its input
] as const;

export type ArchiveCode = (typeof ARCHIVE_CODES)[number];

/** A received archive broke a rule; nothing of it is kept. `entry` is the raw entry name when known. */
export class ArchiveRejectedError extends RejectedError {
  declare readonly code: ArchiveCode;
  constructor(
    code: ArchiveCode,
    readonly entry: string | undefined,
    rule: string,
    options?: ErrorOptions,
  ) {
    super(
      code,
      entry === undefined ? `archive: ${rule}` : `archive entry ${JSON.stringify(entry)}: ${rule}`,
      entry,
      options,
    );
  }
}

/** A file being packed does not match what the job recorded, or changed size while it was read. */
export class InputChangedError extends ConflictError {
  declare readonly code: 'EGJ_INPUT_CHANGED';
  constructor(
    readonly file: string,
    rule: string,
  ) {
    super('EGJ_INPUT_CHANGED', `${file}: ${rule}; the input changed under the job`);
  }
  override details(): Record<string, unknown> {
    return { file: this.file };
  }
}

/** A file given to the packer is not a regular file (a symlink, a directory, a device). */
export class InputNotRegularError extends UsageError {
  declare readonly code: 'EGJ_INPUT_NOT_REGULAR';
  constructor(
    readonly file: string,
    what: string,
    options?: ErrorOptions,
  ) {
    super('EGJ_INPUT_NOT_REGULAR', `${file}: is ${what}; only regular files are packed`, options);
  }
}
