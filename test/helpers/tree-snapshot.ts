// A byte-for-byte picture of a directory tree, so a test can show that a command wrote nothing (compare
// two snapshots) or exactly what it should. Every entry counts: file bytes and mode (setuid/sticky bits
// included), directory modes, symlink targets (never followed), and sockets or fifos by their mode.
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

export type TreeEntry =
  | { path: string; kind: 'file'; mode: number; bytes: Buffer }
  | { path: string; kind: 'dir'; mode: number }
  | { path: string; kind: 'link'; target: string }
  | { path: string; kind: 'special'; mode: number };

/** Every entry under `dir` in sorted walk order (paths relative, '/'-separated), minus `skip` names at the top. */
export function treeEntries(dir: string, skip: readonly string[] = []): TreeEntry[] {
  const out: TreeEntry[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(rel ? join(dir, rel) : dir).sort()) {
      if (!rel && skip.includes(name)) continue;
      const path = rel ? `${rel}/${name}` : name;
      const abs = join(dir, path);
      const st = lstatSync(abs);
      const mode = st.mode & 0o7777;
      if (st.isSymbolicLink()) out.push({ path, kind: 'link', target: readlinkSync(abs) });
      else if (st.isDirectory()) {
        out.push({ path, kind: 'dir', mode });
        walk(path);
      } else if (st.isFile()) out.push({ path, kind: 'file', mode, bytes: readFileSync(abs) });
      else out.push({ path, kind: 'special', mode: st.mode });
    }
  };
  walk('');
  return out;
}

export type TreeSnapshot = Map<string, string>;

/** The tree under `dir` as path → description (directories keyed `path/`), minus `skip` names at the top. */
export function snapshot(dir: string, skip: readonly string[] = []): TreeSnapshot {
  const out: TreeSnapshot = new Map();
  for (const e of treeEntries(dir, skip)) {
    if (e.kind === 'file') out.set(e.path, `file ${e.mode.toString(8)} ${e.bytes.toString('base64')}`);
    else if (e.kind === 'dir') out.set(`${e.path}/`, `dir ${e.mode.toString(8)}`);
    else if (e.kind === 'link') out.set(e.path, `link -> ${e.target}`);
    else out.set(e.path, `special ${e.mode.toString(8)}`);
  }
  return out;
}
