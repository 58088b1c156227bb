// Throw the ArchiveRejectedError for one broken rule. Every check of the extractor goes through
// here, so a violation always aborts the extraction at the point it is seen (the caller then deletes
// the staging directory); `never` lets the type checker see that nothing runs after it.
import { type ArchiveCode, ArchiveRejectedError } from './archive-errors.js';

/** Abort the extraction: `entry` is the raw entry name when known, `rule` the rule it broke. */
export function rejectArchive(
  code: ArchiveCode,
  entry: string | undefined,
  rule: string,
  cause?: unknown,
): never {
  throw new ArchiveRejectedError(code, entry, rule, cause === undefined ? undefined : { cause });
}
