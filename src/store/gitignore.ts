// Does the repository's root .gitignore ignore .gen/? Read from the file itself (a line `.gen`,
// `.gen/`, `/.gen` or `/.gen/`), not from git, so it works before `git init` and costs one read.
// `genjob init` appends `.gen/` when it is missing; nothing else ever edits .gitignore.
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const IGNORES_GEN = /^\/?\.gen\/?\s*$/m;

export function gitignoreIgnoresGen(root: string): boolean {
  try {
    return IGNORES_GEN.test(readFileSync(join(root, '.gitignore'), 'utf8'));
  } catch {
    return false;
  }
}

/** Append `.gen/` to the root .gitignore (creating it) unless it is ignored already. True when added. */
export function addGenToGitignore(root: string): boolean {
  if (gitignoreIgnoresGen(root)) return false;
  const file = join(root, '.gitignore');
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    // no .gitignore yet
  }
  appendFileSync(file, `${text === '' || text.endsWith('\n') ? '' : '\n'}.gen/\n`);
  return true;
}
