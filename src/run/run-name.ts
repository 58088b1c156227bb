// Run names as typed (`hints`, `hints@2`) and the files they name: `.gen/runs/hints.json` for the
// first revision, `.gen/runs/hints@2.json` for the second. A name without `@N` means revision 1 to
// mint (which seals exactly that file) and the newest revision to every command that reads a run.
import { join } from 'node:path';
import { UsageError } from '../core/errors.js';
import { readdirOrEmpty } from '../store/durable.js';
import type { Store } from '../store/store.js';

const RUN_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const TYPED = /^([^@]*)(?:@([0-9]+))?$/;
export const MAX_REVISION = 1_000_000;

export interface RunRef {
  name: string;
  revision: number;
  /** `name` for revision 1, `name@N` after it: the manifest's file name without `.json`. */
  id: string;
}

export function runId(name: string, revision: number): string {
  return revision === 1 ? name : `${name}@${revision}`;
}

/** Parse `NAME` or `NAME@N`; `revision` is undefined when no `@N` was typed. */
export function parseRunName(typed: string): { name: string; revision: number | undefined } {
  const m = TYPED.exec(typed);
  const name = m?.[1] ?? '';
  const rev = m?.[2];
  if (!RUN_NAME.test(name) || (rev !== undefined && !/^[1-9][0-9]*$/.test(rev)) || Number(rev) > MAX_REVISION)
    throw new UsageError(
      'EGJ_BAD_RUN_NAME',
      `${JSON.stringify(typed)}: a run name is 1-64 of a-z 0-9 . _ - starting with a letter or digit, optionally followed by @N for revision N`,
    );
  return { name, revision: rev === undefined ? undefined : Number(rev) };
}

export function runsDir(store: Store): string {
  return store.layout.dir('runs');
}

export function manifestFile(store: Store, ref: Pick<RunRef, 'id'>): string {
  return join(runsDir(store), `${ref.id}.json`);
}

/** The revisions of `name` that have a manifest, ascending. */
export function revisionsOf(store: Store, name: string): number[] {
  const revs: number[] = [];
  for (const file of readdirOrEmpty(store, runsDir(store))) {
    if (file === `${name}.json`) revs.push(1);
    const m = /^(.+)@([1-9][0-9]*)\.json$/.exec(file);
    if (m?.[1] === name && Number(m[2]) <= MAX_REVISION) revs.push(Number(m[2]));
  }
  return revs.sort((a, b) => a - b);
}

/** The run a reading command means: the typed revision, or the newest one of the name. */
export function resolveRun(store: Store, typed: string): RunRef {
  const { name, revision } = parseRunName(typed);
  const revs = revisionsOf(store, name);
  const rev = revision ?? revs.at(-1);
  if (rev === undefined || !revs.includes(rev)) {
    const file = manifestFile(store, { id: runId(name, rev ?? 1) });
    // the run is there under other revisions: minting the name again would only say it is sealed
    if (revs.length > 0)
      throw new UsageError(
        'EGJ_UNKNOWN_RUN',
        `${file}: no run ${JSON.stringify(typed)}: run ${name} has no revision ${rev} (its revisions: ${revs.map((r) => runId(name, r)).join(', ')}); name one of those, or mint revision ${rev} with genjob mint --each GLOB --run ${runId(name, rev!)}`,
      );
    throw new UsageError(
      'EGJ_UNKNOWN_RUN',
      `${file}: no run ${JSON.stringify(typed)}; mint one with genjob mint --each GLOB --run ${name}`,
    );
  }
  return { name, revision: rev, id: runId(name, rev) };
}
