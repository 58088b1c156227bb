// Does the repository's root .gitignore ignore .gen/? Read from the file itself (a line `.gen`,
// `.gen/`, `/.gen` or `/.gen/`), not from git, so it works before `git init` and costs one read.
// `genjob init` appends `.gen/` when it is missing; nothing else ever edits .gitignore.
// Read through the named fs: a disk fault (even on close) is EGJ_IO naming the file, not a crash.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { errnoOf } from '../core/errors.js';
import { nodeFs } from './fs-port.js';

const IGNORES_GEN = /^\/?\.gen\/?\s*$/m;

/** The root .gitignore's text, '' when there is none. */
function readGitignore(root: string): string {
  try {
    return nodeFs.readFileSync(join(root, '.gitignore'), 'utf8');
  } catch (err) {
    if (['ENOENT', 'ENOTDIR', 'EISDIR'].includes(errnoOf(err) ?? '')) return '';
    throw err;
  }
}

export function gitignoreIgnoresGen(root: string): boolean {
  return IGNORES_GEN.test(readGitignore(root));
}

/** Append `.gen/` to the root .gitignore (creating it) unless it is ignored already. True when added. */
export function addGenToGitignore(root: string): boolean {
  const text = readGitignore(root);
  if (IGNORES_GEN.test(text)) return false;
  appendFileSync(join(root, '.gitignore'), `${text === '' || text.endsWith('\n') ? '' : '\n'}.gen/\n`);
  return true;
}
