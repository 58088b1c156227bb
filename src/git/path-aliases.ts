// Which paths a commit changes stand for genjob's own files on some checkout. git writes a tree entry's
// name as it is, and a case-insensitive file system (macOS, Windows) opens the file of another case, HFS+
// ignores some code points (U+200C…), NTFS drops trailing dots and spaces, reads `name:stream` as the file
// and knows 8.3 names (GEN~1, GENJOB~1.JSO). So `.GEN/receipts/…` in a commit writes into .gen/ there,
// and `Genjob-Trust.json` over the trust file the checkout's commands read: the gate holds such a path to
// the rule of the file it stands for.
import { HFS_IGNORABLE, reservedAlias } from '../core/paths.js';

/** True when `path` (relative to the genjob root) lies in .gen/, or is .gen, under some spelling. */
export function inGenDir(path: string): boolean {
  return reservedAlias(path.split('/')[0]!) === '.gen';
}

/** The form of a top-level name that a case-insensitive, HFS+ or NTFS file system opens as the same file. */
function folded(name: string): string {
  return name
    .normalize('NFC')
    .replace(HFS_IGNORABLE, '')
    .toLowerCase()
    .replace(/:.*$/s, '')
    .replace(/[. ]+$/, '');
}

/**
 * True when `path` (relative to the genjob root) is one of `files` (top-level names) under some spelling,
 * or an 8.3 name (`genjob~1.jso`) NTFS may give one of them.
 */
export function isPolicyAlias(path: string, files: readonly string[]): boolean {
  if (path.includes('/')) return false;
  const name = folded(path);
  return files.some((f) => folded(f) === name || shortName(f).test(name));
}

/** The 8.3 names NTFS may give `file` (`genjob-trust.json` → `genjob~N.jso`), lower case. */
function shortName(file: string): RegExp {
  const dot = file.lastIndexOf('.');
  const base = (dot < 0 ? file : file.slice(0, dot)).replace(/[. ]/g, '').toLowerCase().slice(0, 6);
  const ext = dot < 0 ? '' : `.${file.slice(dot + 1, dot + 4).toLowerCase()}`;
  const literal = (s: string) => s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  return new RegExp(`^${literal(base)}~[1-9][0-9]*${literal(ext)}$`);
}
