// genjob init: create .gen/ with all its directories and make the root .gitignore ignore it.
// Idempotent: a second run changes nothing and says so. The root is --root, else the nearest
// directory above with .gen/ or .git/, else (like `git init`) the current directory.
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { GenjobError } from '../core/errors.js';
import { exists } from '../store/durable.js';
import { addGenToGitignore } from '../store/gitignore.js';
import { Store } from '../store/store.js';

function rootFor(o: CommonOptions): string {
  try {
    return findRoot(o.root);
  } catch (err) {
    if (err instanceof GenjobError && err.code === 'EGJ_NO_ROOT') return process.cwd();
    throw err;
  }
}

export async function init(o: CommonOptions): Promise<CommandResult> {
  const store = new Store(rootFor(o));
  const existed = exists(store, store.layout.gen);
  store.ensure();
  const ignored = addGenToGitignore(store.root);
  const lines = [
    existed ? `${store.layout.gen} already exists` : `created ${store.layout.gen}`,
    ignored ? 'added .gen/ to .gitignore' : '.gitignore already ignores .gen/',
  ];
  return {
    human: lines.join('\n'),
    json: { ok: true, gen: store.layout.gen, created: !existed, gitignore_added: ignored },
  };
}
