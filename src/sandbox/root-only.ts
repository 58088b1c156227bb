// What under /etc only root may read, masked in root's sandbox (--sandbox-user root; a sandbox user reads
// none of it by its modes, sandbox-user.ts). Root inside the sandbox is the host's uid 0 and gid 0 without
// capabilities: no capability lets it past a file's mode, but its uid and gid match the owner of the
// host's root-only files, so /etc/security/opasswd, a 0600 token in /etc/default or a 0700 directory of
// rules read as they would for root outside. In root's sandbox, every such entry under /etc is masked like
// the named /etc secrets. /usr and /opt are not walked: /usr is too big to walk per process (a second on a
// small system) and holds programs, not secrets; /opt is what the host chose to install (the sandbox user,
// the default, is what closes them).
import { type Dirent, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The directories walked for root-only entries. */
export const ROOT_ONLY_DIRS = ['/etc'];

let found: string[] | undefined;

/**
 * Every regular file or directory under `dirs` that a user other than its owner and group may not read
 * (a directory: list and search), outermost only. Symlinks are not followed (their target is masked where it
 * is, if it is under a walked directory). Walked once per process: serve's session and a check run many
 * sandboxes, and /etc does not change its secrets under them.
 */
export function rootOnlyPaths(dirs: readonly string[] = ROOT_ONLY_DIRS): string[] {
  if (dirs === ROOT_ONLY_DIRS && found) return found;
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // gone, or not a directory
    }
    // the listing's types spare a stat of each link (/etc holds hundreds): only a mode is stat'ed
    for (const e of entries) {
      if (!e.isDirectory() && !e.isFile()) continue;
      const path = join(dir, e.name);
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (st?.isDirectory()) {
        if ((st.mode & 0o005) !== 0o005) out.push(path);
        else walk(path);
      } else if (st?.isFile() && (st.mode & 0o004) === 0) out.push(path);
    }
  };
  for (const d of dirs) walk(d);
  out.sort(); // the same argv for the same /etc
  if (dirs === ROOT_ONLY_DIRS) found = out;
  return out;
}
