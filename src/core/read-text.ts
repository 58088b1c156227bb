// Node 20 reads a file as utf8 in C++ and, when the file's close fails (EIO, EDQUOT on a network or
// full disk), aborts the whole process on an internal assertion: no exception, no exit code of ours.
// Reading bytes goes through fs.closeSync, whose failure is an ordinary error; decode them here.
import { type PathOrFileDescriptor, readFileSync } from 'node:fs';

/** The whole file (or fd) as utf8 text; a failure, close included, is thrown as an error. */
export function readText(path: PathOrFileDescriptor): string {
  return readFileSync(path).toString('utf8');
}
