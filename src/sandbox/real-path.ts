// Paths compared as the files they really are. Every exposed path (--generator-bind) and every
// hidden one (the cache, the workspaces root, the signing key, /etc secrets) is resolved with
// realpath before the sandbox decides what to mask or refuse: a symlink — a rotation link to a key, a
// bind given through a link — must not make two names of one file look unrelated.
import { realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';

/** realpath of `p`; a tail that does not exist (yet) is kept as written beneath its existing head. */
export function realPath(p: string): string {
  const abs = resolve(p);
  try {
    return realpathSync(abs);
  } catch {
    const parent = dirname(abs);
    return parent === abs ? abs : join(realPath(parent), basename(abs));
  }
}

/** `inner` is `outer` or lies beneath it, by whole path components (`/a/bc` is not under `/a/b`). */
export function within(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith('/') ? outer : `${outer}/`);
}

/** `p` (under `from`) as seen where `from` is mounted at `to`. */
export function rebase(p: string, from: string, to: string): string {
  return p === from ? to : join(to, relative(from, p));
}
