// A checker's binding digest: sha256 over the canonical JSON of its normalised definition, the
// sha256 of each file it depends on as a given tree holds it (pinned lockfiles; a judge's rubric)
// and, for a judge, the version of genjob's prompt template and the endpoint it asks on this machine
// (judge-endpoint.ts). A record made under one binding is never current under another: editing the
// command, a lockfile, the rubric or the model, or pointing the judge at another server, shows.
import { canonicalBytes } from '../core/canonical-json.js';
import { sha256Hex } from '../core/sha256.js';
import { catFile } from '../git/cat-file.js';
import { type Checker, DEFAULT_PINS } from './checker.js';
import { judgeEndpoint } from './judge-endpoint.js';
import { JUDGE_PROMPT_VERSION } from './judge-prompt.js';

export const BINDING_SCHEMA = 'genjob/checker-binding@1';

/** A file the binding covers: its sha256 in the tree, or null when the tree does not hold it. */
export interface BoundFile {
  path: string;
  sha256: string | null;
}

/**
 * The binding digest of `checker` given the digests of the files it depends on; a judge's also covers
 * the endpoint `env` (and builtin:openai's config file) point it at.
 */
export function bindingDigest(
  checker: Checker,
  files: readonly BoundFile[],
  env: NodeJS.ProcessEnv = process.env,
): string {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return sha256Hex(
    canonicalBytes({
      schema: BINDING_SCHEMA,
      definition: checker,
      files: sorted,
      ...(checker.kind === 'judge'
        ? { prompt_version: JUDGE_PROMPT_VERSION, endpoint: judgeEndpoint(checker, env) }
        : {}),
    }),
  );
}

/** The files a checker depends on: a judge's rubric; a command's `pin`, or the default lockfiles. */
export function dependedFiles(checker: Checker): { paths: string[]; keepAbsent: boolean } {
  if (checker.kind === 'judge') return { paths: [checker.rubric], keepAbsent: true };
  if (checker.pin !== null) return { paths: checker.pin, keepAbsent: true };
  // the default lockfiles count only where present: adding one later changes the binding all the same
  return { paths: [...DEFAULT_PINS], keepAbsent: false };
}

/** The files `checker` depends on as `tree` (any tree-ish) holds them. */
export async function boundFiles(root: string, tree: string, checker: Checker): Promise<BoundFile[]> {
  return (await boundFilesOfEach(root, tree, [checker]))[0]!;
}

/** boundFiles of each checker, read in one `cat-file` for all of them. */
async function boundFilesOfEach(
  root: string,
  tree: string,
  checkers: readonly Checker[],
): Promise<BoundFile[][]> {
  const depended = checkers.map(dependedFiles);
  const objects = await catFile(
    root,
    depended.flatMap(({ paths }) => paths.map((p) => `${tree}:${p}`)),
    { contents: true },
  );
  let at = 0;
  return depended.map(({ paths, keepAbsent }) => {
    const files: BoundFile[] = [];
    for (const path of paths) {
      const o = objects[at++];
      const sha256 = o?.type === 'blob' && o.content ? sha256Hex(o.content) : null;
      if (sha256 !== null || keepAbsent) files.push({ path, sha256 });
    }
    return files;
  });
}

/** The binding digest of each checker at `tree`, by name. */
export async function bindingsAt(
  root: string,
  tree: string,
  checkers: readonly Checker[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Map<string, string>> {
  const files = await boundFilesOfEach(root, tree, checkers);
  return new Map(checkers.map((c, i) => [c.name, bindingDigest(c, files[i]!, env)]));
}
