// A generator command whose first word is a path to a file (`./gen.sh`, `../tools/gen`, `/srv/gen`)
// is run by that file's absolute path, resolved from where serve was started (a local serve starts
// where `work` did): the command runs in the job's workspace, where `./gen.sh` names nothing. The file
// itself — not its directory — is shown read-only inside the sandbox (bwrap-argv.ts) when it is
// executable; an executable is what a command names, so no other host file becomes readable by it.
import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { realPath } from '../sandbox/real-path.js';
import { shellQuote } from '../transport/ssh-options.js';

export type GeneratorFile =
  /** The first word is no path (a command on PATH, a shell builtin, a quoted or expanded word). */
  | { kind: 'none' }
  | { kind: 'missing'; word: string; path: string }
  /** `path`: absolute, as the command names it; `real`: the file it is; `command`: to run in the workspace. */
  | { kind: 'file'; word: string; path: string; real: string; executable: boolean; command: string };

/** A plain first word holding a `/`: no quote, expansion, glob, redirection or assignment in it. */
const FIRST_WORD = /^\s*([^\s'"\\$`;&|<>(){}*?[\]#~=]*\/[^\s'"\\$`;&|<>(){}*?[\]#~=]*)(?=\s|$)/;

export function generatorFile(command: string, cwd: string): GeneratorFile {
  const m = FIRST_WORD.exec(command);
  if (m === null) return { kind: 'none' };
  const word = m[1]!;
  const path = isAbsolute(word) ? resolve(word) : resolve(cwd, word);
  const st = statSync(path, { throwIfNoEntry: false });
  if (st === undefined || !st.isFile()) return { kind: 'missing', word, path };
  const real = realPath(path);
  let executable = true;
  try {
    accessSync(real, constants.X_OK);
  } catch {
    executable = false;
  }
  // an absolute word stays as written: `/bin/sh` must not become the file it links to (argv[0] matters)
  const run = isAbsolute(word) ? command : `${shellQuote(path)}${command.slice(m[0].length)}`;
  return { kind: 'file', word, path, real, executable, command: run };
}

/** Why a command whose first word is `g` (resolved from `cwd`) cannot start on this host, or null. */
export function generatorFileProblem(g: GeneratorFile, cwd: string): string | null {
  if (g.kind === 'missing')
    return `generator ${JSON.stringify(g.word)}: no such file ${g.path} (a path is resolved from where serve was started: ${cwd})`;
  if (g.kind === 'file' && !g.executable)
    return `generator ${JSON.stringify(g.word)}: ${g.real} is not executable (chmod +x it, or run it through its interpreter: sh ${g.word})`;
  return null;
}
