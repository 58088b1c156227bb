// The one rule for a path inside a job's contract: relative, '/'-separated, normalised.
// Everything that names a file — mint arguments, bundle entries, receipt outputs, apply
// targets — goes through pathProblem(), so there is exactly one definition of "inside".

export const MAX_PATH_BYTES = 1024;
export const MAX_COMPONENT_BYTES = 255;
export const MAX_DEPTH = 32;

/** Top-level directories that belong to genjob or git and never appear in a contract. */
export const RESERVED_TOP = new Set(['.gen', '.git']);

/** Why `p` is not a valid contract path, or null when it is. */
export function pathProblem(p: unknown): string | null {
  if (typeof p !== 'string') return 'path is not a string';
  if (p.length === 0) return 'path is empty';
  if (p.includes('\0')) return 'path contains NUL';
  if (p.includes('\\')) return 'path contains a backslash';
  if (/[\x00-\x1f\x7f]/.test(p)) return 'path contains a control character';
  if (/\p{Cs}/u.test(p)) return 'path is not valid UTF-8 (lone surrogate)';
  if (p.startsWith('/')) return 'path is absolute';
  if (/^[A-Za-z]:/.test(p)) return 'path starts with a drive letter';
  if (Buffer.byteLength(p) > MAX_PATH_BYTES) return `path is longer than ${MAX_PATH_BYTES} bytes`;
  const parts = p.split('/');
  if (parts.length > MAX_DEPTH) return `path is deeper than ${MAX_DEPTH} components`;
  for (const part of parts) {
    if (part === '') return 'path has an empty component (// or a trailing /)';
    if (part === '.' || part === '..') return `path has a '${part}' component`;
    if (Buffer.byteLength(part) > MAX_COMPONENT_BYTES)
      return `a component is longer than ${MAX_COMPONENT_BYTES} bytes`;
  }
  if (RESERVED_TOP.has(parts[0]!)) return `path is inside ${parts[0]}/`;
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
