// A real git repository in a temp dir for the tests of src/git: its own config (identity, default
// branch, no system or user config), a genjob Store at its root, and commits made from a map of files.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp-store.js';

export interface Repo {
  root: string;
  store: Store;
  /** The hash its objects are named by. */
  objectFormat: 'sha1' | 'sha256';
  /** Run git in the repository; stdout without its final newline. */
  git(args: readonly string[], input?: string | Buffer): string;
  /** The bytes of the blob at `rev:path`, or null when there is none. */
  blob(rev: string, path: string): Buffer | null;
  /** Write `bytes` as a loose object of `type` as is (git checks nothing: for hostile objects); its id. */
  object(type: 'blob' | 'tree' | 'commit' | 'tag', bytes: string | Buffer): string;
  /** Write (string) or delete (null) the files, stage exactly them, commit with `message`; the new commit id. */
  commit(message: string, files: Record<string, string | null>, opts?: { mode?: string }): string;
}

export function tempGitRepo(
  prefix: string,
  opts: { objectFormat?: 'sha1' | 'sha256'; parent?: string } = {},
): Repo {
  const base = tempDir(prefix, opts.parent);
  const root = join(base, 'repo');
  mkdirSync(root);
  const config = join(base, 'gitconfig');
  writeFileSync(
    config,
    // no `git maintenance run --auto` process after every commit
    '[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[maintenance]\n\tauto = false\n',
  );
  const env = { PATH: process.env.PATH, GIT_CONFIG_GLOBAL: config, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' };
  const git = (args: readonly string[], input?: string | Buffer) =>
    execFileSync('git', args, { cwd: root, env, input }).toString('utf8').replace(/\n$/, '');
  const objectFormat = opts.objectFormat ?? 'sha1';
  git(['init', '-q', `--object-format=${objectFormat}`]);
  writeFileSync(join(root, '.gitignore'), '.gen/\n');
  const store = new Store(root).ensure();
  return {
    root,
    store,
    objectFormat,
    git,
    blob(rev, path) {
      try {
        return execFileSync('git', ['cat-file', 'blob', `${rev}:${path}`], { cwd: root, env, stdio: 'pipe' });
      } catch {
        return null;
      }
    },
    object: (type, bytes) => writeLooseObject(root, objectFormat, type, bytes),
    commit(message, files, opts = {}) {
      const paths = Object.keys(files);
      for (const [path, text] of Object.entries(files)) {
        if (text === null) rmSync(join(root, path), { force: true });
        else {
          mkdirSync(dirname(join(root, path)), { recursive: true });
          writeFileSync(join(root, path), text);
        }
      }
      // one `git add -A` stages the writes and the deletions of exactly these paths
      if (paths.length > 0) git(['add', '-A', '--', ...paths]);
      if (opts.mode) git(['update-index', `--chmod=${opts.mode}`, '--', ...paths]);
      git(['commit', '-q', '--allow-empty', '-m', message]);
      return git(['rev-parse', 'HEAD']);
    },
  };
}

/**
 * What `git hash-object -t TYPE --literally -w --stdin` does, without a process (the tests write
 * hundreds of objects, and a spawn from the test's process costs tens of ms): the object is
 * "TYPE SIZE\0BYTES", named by its hash, stored zlib-deflated at objects/xx/rest; an existing one is kept.
 */
function writeLooseObject(
  root: string,
  format: 'sha1' | 'sha256',
  type: string,
  bytes: string | Buffer,
): string {
  const body = Buffer.from(bytes);
  const object = Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]);
  const id = createHash(format).update(object).digest('hex');
  const file = join(root, '.git', 'objects', id.slice(0, 2), id.slice(2));
  mkdirSync(dirname(file), { recursive: true });
  try {
    writeFileSync(file, deflateSync(object), { flag: 'wx', mode: 0o444 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return id;
}
