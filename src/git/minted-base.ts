// Does a commit hold a job's inputs and the files it only read (--read) exactly as the job was minted
// from them: each a regular file with its minted sha256, each file the job creates absent? A generated
// commit must sit on such a parent (its receipt belongs to the history it was made for, so an old one
// re-committed over a later fix, to an input or to a file the generator only saw, is refused), and
// `apply --commit` asks the same of HEAD before it writes anything.
import type { Job } from '../core/job.js';
import { sha256Hex } from '../core/sha256.js';
import { type TreeEntryAt, treeEntries } from './tree-entries.js';

export interface StaleInput {
  path: string;
  /** The input's digest when minted, null for a file the job creates. */
  minted: string | null;
  /** What the commit holds there: `absent`, `sha256 <12 hex>`, or `an entry of mode <mode>` (not a regular file). */
  held: string;
  /** The sha256 of the file the commit holds there, null when none. */
  heldSha256: string | null;
}

/**
 * The first input or read file `commit` (null: none, an unborn branch or a root commit's parent) does
 * not hold as minted, or null; and the commit's entries at their paths.
 */
export async function staleInput(
  root: string,
  commit: string | null,
  job: Pick<Job, 'inputs' | 'reads'>,
): Promise<{ stale: StaleInput | null; entries: ReadonlyMap<string, TreeEntryAt | null> }> {
  const files = [...job.inputs, ...(job.reads ?? [])];
  const entries =
    commit === null
      ? new Map<string, null>()
      : await treeEntries(
          root,
          commit,
          files.map((f) => f.path),
          { contents: true },
        );
  for (const input of files) {
    const e = entries.get(input.path) ?? null;
    const heldSha256 = e?.bytes === undefined ? null : sha256Hex(e.bytes);
    const held =
      e === null
        ? 'absent'
        : heldSha256 === null
          ? `an entry of mode ${e.mode}`
          : `sha256 ${heldSha256.slice(0, 12)}`;
    if (heldSha256 !== input.sha256 || (e !== null && heldSha256 === null))
      return { stale: { path: input.path, minted: input.sha256, held, heldSha256 }, entries };
  }
  return { stale: null, entries };
}
