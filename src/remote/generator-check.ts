// Which generator a request gets on this host, and whether it can run at all — decided before a
// bundle is read or anything is cached. A missing generator, one the host's pin forbids, an unknown
// built-in or a built-in whose settings are unusable (no GENJOB_OPENAI_BASE_URL, an `htp://` typo)
// is a refusal, never a result: no generator ran, so there is nothing to keep. So is a command whose
// first word names a file this host does not have (`./gen.sh` from the wrong directory), or one the
// sandbox user of a serve run as root cannot read.
import { exposureProblem } from '../sandbox/exposure.js';
import type { SandboxPolicy } from '../sandbox/policy.js';
import { unreadable } from '../sandbox/sandbox-user.js';
import { generatorFile, generatorFileProblem } from './generator-file.js';

/** Generators genjob runs itself (no command): `builtin:<name>`. */
export const BUILTIN_PREFIX = 'builtin:';

/** The longest generator command a request may name (a longer one belongs in a script the command names). */
export const MAX_GENERATOR_CHARS = 4096;

/** Why a generator command cannot travel in a request or start a process, or null. */
export function generatorCommandProblem(command: string): string | null {
  if (command.trim() === '') return 'the generator command is empty';
  if (command.length > MAX_GENERATOR_CHARS)
    return `the generator command is ${command.length.toLocaleString('en')} characters, more than the ${MAX_GENERATOR_CHARS.toLocaleString('en')} a host takes: put it in a script and name that (--generator ./gen.sh)`;
  if (command.includes('\0'))
    return 'the generator command holds a NUL character, which no process can be started with';
  return null;
}

export type GeneratorChoice =
  | { ok: true; generator: string; pinned: boolean }
  | { ok: false; code: `EGJ_${string}`; message: string };

export function chooseGenerator(pinned: string | null, requested: string | null): GeneratorChoice {
  if (pinned !== null && requested !== null && requested !== pinned) {
    return {
      ok: false,
      code: 'EGJ_GENERATOR_PINNED',
      message: `this host runs only its pinned generator, not ${JSON.stringify(requested)}`,
    };
  }
  const refused = requested === null ? null : generatorCommandProblem(requested);
  if (refused !== null) return { ok: false, code: 'EGJ_GENERATOR_CONFIG', message: refused };
  const generator = pinned ?? requested;
  if (generator === null) {
    return {
      ok: false,
      code: 'EGJ_NO_GENERATOR',
      message:
        'no generator: pass --generator CMD to work or set "generator" in genjob.config.json, or pin one with serve --generator',
    };
  }
  return { ok: true, generator, pinned: pinned !== null };
}

/**
 * A generator's configuration problem on this host, or null: a built-in's settings (its own
 * environment), or a command whose first word names a file that is not there, not executable, or
 * something the sandbox hides (generator-file.ts).
 */
export async function generatorConfigProblem(
  generator: string,
  env: NodeJS.ProcessEnv,
  policy?: SandboxPolicy,
): Promise<string | null> {
  if (!generator.startsWith(BUILTIN_PREFIX)) {
    const file = generatorFile(generator, process.cwd());
    const problem = generatorFileProblem(file, process.cwd());
    if (problem !== null || file.kind !== 'file' || policy === undefined) return problem;
    // the file is shown to the generator: never one that serve hides
    const hidden = policy.kind === 'bwrap' ? exposureProblem(file.real, policy) : null;
    if (hidden !== null) return `generator ${JSON.stringify(file.word)}: ${hidden}`;
    // and run as the sandbox user, confined or not: that user must read it (bwrap must reach it to bind it)
    const unread = policy.user ? unreadable(file.real, policy.user) : null;
    return unread === null
      ? null
      : `generator ${JSON.stringify(file.word)}: the sandbox user runs it, and ${unread}; put it where that user may read it, or pass --sandbox-user root`;
  }
  const { OPENAI_GENERATOR_NAME } = await import('./generators/openai.js');
  if (generator !== OPENAI_GENERATOR_NAME)
    return `unknown built-in generator ${JSON.stringify(generator)} (known: ${OPENAI_GENERATOR_NAME})`;
  const { readOpenAiConfig } = await import('./generators/openai-config.js');
  const config = readOpenAiConfig(env);
  return config.ok ? null : `${generator}: ${config.problem}`;
}

/**
 * Would this host run `requested` (null: its pinned one)? Answered in serve's hello when `work`
 * starts it with --check-generator, so the check needs nothing to travel from the worker to the host.
 */
export async function checkGenerator(
  pinned: string | null,
  requested: string | null,
  env: NodeJS.ProcessEnv,
  policy?: SandboxPolicy,
): Promise<GeneratorChoice> {
  const choice = chooseGenerator(pinned, requested);
  if (!choice.ok) return choice;
  const problem = await generatorConfigProblem(choice.generator, env, policy);
  return problem === null ? choice : { ok: false, code: 'EGJ_GENERATOR_CONFIG', message: problem };
}
