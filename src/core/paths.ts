// The one rule for a path inside a job's contract: relative, '/'-separated, normalised.
// Everything that names a file — mint arguments, bundle entries, receipt outputs, apply
// targets — goes through pathProblem(), so there is exactly one definition of "inside". No component
// may be .git or .gen under any spelling a filesystem folds to them (git's own verify_path rules).

export const MAX_PATH_BYTES = 1024;
export const MAX_COMPONENT_BYTES = 255;
export const MAX_DEPTH = 32;

/** Directory names that belong to git or genjob and never appear as a component of a contract path. */
export const RESERVED_NAMES = ['.git', '.gen'] as const;

// Code points HFS+ ignores when it compares names (git's utf8.c next_hfs_char): '.g\u200cit' is '.git' there.
export const HFS_IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/gu;
// NTFS drops trailing dots and spaces, reads '::$INDEX_ALLOCATION' streams and knows the 8.3 alias
// 'GIT~1' (git's path.c is_ntfs_dotgit); the same holds for '.gen' and 'GEN~1'.
const NTFS_ALIAS = /^(?:\.(git|gen)|(git|gen)~1)[. ]*(?::.*)?$/;

/**
 * Printable ASCII but the backslash: already NFC, no HFS+ ignorable, one byte a character, nothing a
 * path may not hold. Nearly every path is such; it skips the Unicode work (mint checks thousands).
 */
const PLAIN = /^[\x20-\x5b\x5d-\x7e]*$/;

/** Which reserved directory `part` names on some filesystem git protects against, or null. */
export function reservedAlias(part: string): string | null {
  let folded: string;
  if (PLAIN.test(part)) {
    // every alias starts with '.' or a 'g' in either case
    const first = part.charCodeAt(0) | 0x20;
    if (first !== 0x2e && first !== 0x67) return null;
    folded = part.toLowerCase();
  } else folded = part.normalize('NFC').replace(HFS_IGNORABLE, '').toLowerCase();
  const m = NTFS_ALIAS.exec(folded);
  return m === null ? null : `.${m[1] ?? m[2]}`;
}

/** `s` with everything outside printable ASCII written as \uXXXX, for a message. */
function shown(s: string): string {
  return JSON.stringify(s).replace(
    /[^\x20-\x7e]/gu,
    (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`,
  );
}

/** Why `p` is not a valid contract path, or null when it is. */
export function pathProblem(p: unknown): string | null {
  if (typeof p !== 'string') return 'path is not a string';
  if (p.length === 0) return 'path is empty';
  const plain = PLAIN.test(p); // then none of the four next rules applies, and bytes are characters
  if (!plain) {
    if (p.includes('\0')) return 'path contains NUL';
    if (p.includes('\\')) return 'path contains a backslash';
    if (/[\x00-\x1f\x7f]/.test(p)) return 'path contains a control character';
    if (/\p{Cs}/u.test(p)) return 'path is not valid UTF-8 (lone surrogate)';
  }
  if (p.startsWith('/')) return 'path is absolute';
  if (/^[A-Za-z]:/.test(p)) return 'path starts with a drive letter';
  const bytes = (s: string) => (plain ? s.length : Buffer.byteLength(s));
  if (bytes(p) > MAX_PATH_BYTES) return `path is longer than ${MAX_PATH_BYTES} bytes`;
  const parts = p.split('/');
  if (parts.length > MAX_DEPTH) return `path is deeper than ${MAX_DEPTH} components`;
  for (const part of parts) {
    if (part === '') return 'path has an empty component (// or a trailing /)';
    if (part === '.' || part === '..') return `path has a '${part}' component`;
    if (bytes(part) > MAX_COMPONENT_BYTES) return `a component is longer than ${MAX_COMPONENT_BYTES} bytes`;
    const reserved = reservedAlias(part);
    if (reserved !== null) {
      return part === reserved
        ? `path is inside ${reserved}/`
        : `path is inside ${reserved}/ (component ${shown(part)} is ${reserved} after case folding, HFS+ or NTFS aliasing)`;
    }
  }
  return null;
}

/** The form two paths share when a case-insensitive or normalising filesystem would confuse them. */
export function foldedPath(p: string): string {
  return p.normalize('NFC').toLowerCase();
}

/** Every proper ancestor directory of a contract path, shortest first: 'a/b/c' → ['a', 'a/b']. */
export function ancestors(p: string): string[] {
  const parts = p.split('/');
  const out: string[] = [];
  for (let i = 1; i < parts.length; i++) out.push(parts.slice(0, i).join('/'));
  return out;
}
