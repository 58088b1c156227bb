// A handle on one repository's .gen/ directory: its layout plus the filesystem it goes through.
// Every store function takes a Store, so tests can swap the filesystem for a fault-injecting one.

import { join } from 'node:path';
import { type FsPort, nodeFs } from './fs-port.js';
import { ALL_DIRS, LATER_DIRS, Layout } from './layout.js';
import { assertRealDirs } from './real-dirs.js';

export class Store {
  readonly layout: Layout;
  /** Whether ensure() found .gen/'s own directories real once: apply --all ensures once per job. */
  #realDirs = false;
  constructor(
    readonly root: string,
    readonly fs: FsPort = nodeFs,
  ) {
    this.layout = new Layout(root);
  }

  /** Create any missing .gen/ directories (idempotent; cheap when they exist). */
  ensure(): this {
    const gen = this.layout.gen;
    // .gen/ can be committed: none of its own directories may be a link out of the repository (what this
    // process makes there later is its own)
    if (!this.#realDirs)
      assertRealDirs(
        this,
        [gen, ...[...ALL_DIRS, ...LATER_DIRS].map((d) => join(gen, d))],
        'genjob',
        'writes',
      );
    this.#realDirs = true;
    try {
      this.fs.lstatSync(join(gen, 'locks'));
      return this;
    } catch {
      // first use: fall through and create everything
    }
    this.fs.mkdirSync(gen, { recursive: true });
    for (const d of ALL_DIRS) this.fs.mkdirSync(join(gen, d), { recursive: true });
    return this;
  }
}
