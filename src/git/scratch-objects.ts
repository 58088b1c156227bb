// The merge gate recomputes the automatic merge of a merge commit's parents (automatic-merge.ts). git
// merge-tree writes that merge's blobs and trees into the object store, and takes merge drivers from the
// .gitattributes of the work tree and the index, which in CI are the branch under review: its
// `* merge=union` would make a conflict resolved by hand look automatic. So those merges run sealed: the
// repository's objects readable as an alternate, new objects written to a throwaway store outside it, an
// empty work tree, run from inside it (git reads a relative .gitattributes from where it runs when that
// is outside the work tree), and no index: attributes only from the repository's own info/attributes and
// the user's config. The repository stays byte for byte as it was, whatever the gate decides or wherever it stops.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitText } from './run-git.js';

/** A path in GIT_ALTERNATE_OBJECT_DIRECTORIES: C-quoted, so a ':' or a quote in it is not a separator. */
function alternate(path: string): string {
  return `"${path.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Where git runs sealed (`-C cwd`), and its environment. */
export interface Sealed {
  cwd: string;
  env: Record<string, string>;
}

export class ScratchObjects {
  private dir: string | undefined;
  private envs: Promise<{ sealed: Sealed; reading: Record<string, string> }> | undefined;

  constructor(private readonly root: string) {}

  /** Where and in which environment git runs to write objects without touching the repository or reading the branch's attributes. */
  async sealed(): Promise<Sealed> {
    return (await this.made()).sealed;
  }

  /** The environment to read what sealed commands wrote, in the usual view of the repository. */
  async reading(): Promise<Record<string, string>> {
    return (await this.made()).reading;
  }

  /** Remove the throwaway store (a no-op when nothing was made). */
  dispose(): void {
    if (this.dir !== undefined) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
    this.envs = undefined;
  }

  private made() {
    if (this.envs === undefined) this.envs = this.make();
    return this.envs;
  }

  private async make() {
    const [gitDir, objects] = (
      await gitText(this.root, [
        'rev-parse',
        '--absolute-git-dir',
        '--path-format=absolute',
        '--git-path',
        'objects',
      ])
    ).split('\n') as [string, string];
    const dir = mkdtempSync(join(tmpdir(), 'genjob-merge-'));
    this.dir = dir;
    const store = join(dir, 'objects');
    const work = join(dir, 'work');
    mkdirSync(work);
    mkdirSync(store);
    return {
      sealed: {
        cwd: work,
        env: {
          GIT_DIR: gitDir,
          GIT_WORK_TREE: work,
          GIT_INDEX_FILE: join(dir, 'index'),
          GIT_OBJECT_DIRECTORY: store,
          GIT_ALTERNATE_OBJECT_DIRECTORIES: alternate(objects),
        },
      },
      reading: { GIT_ALTERNATE_OBJECT_DIRECTORIES: alternate(store) },
    };
  }
}
