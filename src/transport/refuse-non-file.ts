// Only regular files are extracted. Every other tar entry type is refused with the code of its class
// (a link is EGJ_ARCHIVE_LINK, anything else EGJ_ARCHIVE_TYPE) and the rule it breaks, so a
// dead-letter record says "symbolic links are not accepted" rather than "bad entry".

import type { ArchiveCode } from './archive-errors.js';
import { rejectArchive as reject } from './reject-archive.js';

/** Entry types other than a regular file, and the rule each breaks. */
const REFUSED_TYPES: Record<string, [ArchiveCode, string]> = {
  '1': ['EGJ_ARCHIVE_LINK', 'hard links are not accepted'],
  '2': ['EGJ_ARCHIVE_LINK', 'symbolic links are not accepted'],
  K: ['EGJ_ARCHIVE_LINK', 'a GNU long link name: links are not accepted'],
  '5': ['EGJ_ARCHIVE_TYPE', 'directory entries are not accepted (parents are created implicitly)'],
  D: ['EGJ_ARCHIVE_TYPE', 'directory entries are not accepted (parents are created implicitly)'],
  '3': ['EGJ_ARCHIVE_TYPE', 'device entries are not accepted'],
  '4': ['EGJ_ARCHIVE_TYPE', 'device entries are not accepted'],
  '6': ['EGJ_ARCHIVE_TYPE', 'FIFO entries are not accepted'],
};

/** Throw unless `type` is a regular file ('0', the old '\0', or contiguous '7'). */
export function refuseNonFile(type: string, name: string): void {
  if (type === '0' || type === '' || type === '7') return;
  const [code, rule] = Object.hasOwn(REFUSED_TYPES, type)
    ? REFUSED_TYPES[type]!
    : (['EGJ_ARCHIVE_TYPE', `entry type ${JSON.stringify(type)} is not a regular file`] as const);
  reject(code, name, rule);
}
