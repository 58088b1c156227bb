// One action over many keys (drop, retry, cancel with several keys or --run NAME), like make -k: every key
// is tried, each failure is a row and a stderr line, and the exit code is the worst. One key typed alone
// keeps the single-job behaviour: its error is the command's error. With --run, the run's jobs that the
// action cannot take (by their state) are counted as skipped, not failed.
import { type Failure, failureFields, failureOf, failureSummary } from '../cli/failures.js';
import type { CommandResult } from '../cli/result.js';
import { UsageError } from '../core/errors.js';
import { runKeys } from '../run/run-keys.js';
import { findJob, resolveKey } from '../store/job-states.js';
import type { JobState } from '../store/layout.js';
import type { Store } from '../store/store.js';

export interface KeysChoice {
  keys?: string[];
  run?: string;
}

export interface Chosen {
  keys: string[];
  /** The run's jobs left out because the action does not take their state. */
  skipped: number;
  /** More than one key could be meant: failures become rows, not the command's error. */
  many: boolean;
}

/**
 * The keys typed (resolved; `dead` as resolveKey's) or the run's jobs in `runStates` (null: in no state
 * at all, i.e. only in dead/) that `take` accepts.
 */
export function chooseKeys(
  store: Store,
  o: KeysChoice,
  runStates: ReadonlyArray<JobState | null>,
  opts: {
    /** Take keys only dead/ holds; a function takes those it accepts, any other is refused as unknown. */
    dead?: boolean | ((key: string) => boolean);
    take?: (key: string, state: JobState | null) => boolean;
  } = {},
): Chosen {
  const typed = o.keys ?? [];
  const accept = opts.dead;
  const resolve = (t: string) => {
    if (typeof accept !== 'function') return resolveKey(store, t, { dead: accept === true });
    // as a command without dead keys resolves; a dead key only when accepted, else that error stands
    try {
      return resolveKey(store, t);
    } catch (err) {
      const key = resolveDeadOrUndefined(store, t);
      if (key !== undefined && accept(key)) return key;
      throw err;
    }
  };
  if (o.run !== undefined && typed.length > 0)
    throw new UsageError('EGJ_USAGE', 'give keys or --run NAME, not both');
  if (o.run !== undefined) {
    const all = runKeys(store, o.run).current;
    const keys = all.filter((k) => {
      const state = findJob(store, k)?.state ?? null;
      return runStates.includes(state) && (opts.take?.(k, state) ?? true);
    });
    return { keys, skipped: all.length - keys.length, many: true };
  }
  if (typed.length === 0)
    throw new UsageError('EGJ_USAGE', 'name one or more keys (or unique prefixes), or --run NAME');
  return {
    keys: [...new Set(typed.map(resolve))],
    skipped: 0,
    many: typed.length > 1,
  };
}

function resolveDeadOrUndefined(store: Store, typed: string): string | undefined {
  try {
    return resolveKey(store, typed, { dead: true });
  } catch {
    return undefined;
  }
}

export interface Done {
  key: string;
  line: string;
  json: Record<string, unknown>;
}

/** Run `act` on every chosen key; a single key's failure is thrown as it is. */
export async function eachKey(
  chosen: Chosen,
  verb: string,
  act: (key: string) => Promise<Done>,
  run?: string,
): Promise<CommandResult> {
  const done: Done[] = [];
  const failures: Failure[] = [];
  const lines: string[] = [];
  for (const key of chosen.keys) {
    try {
      const d = await act(key);
      done.push(d);
      lines.push(d.line);
    } catch (err) {
      if (!chosen.many) throw err;
      const f = failureOf(key, err);
      failures.push(f);
      lines.push(`${key.slice(0, 12)} not ${verb} (${f.code})`);
    }
  }
  if (chosen.keys.length === 0) lines.push(`nothing to do: no job of run ${run} can be ${verb}`);
  if (chosen.skipped > 0)
    lines.push(`${chosen.skipped} job(s) of run ${run} skipped (not in a state that can be ${verb})`);
  if (failures.length > 0) lines.push(failureSummary(failures, chosen.keys.length, `not ${verb}`));
  // one key: the single-job JSON shape, as before many keys were taken
  const json =
    !chosen.many && done.length === 1
      ? done[0]!.json
      : {
          ok: failures.length === 0,
          done: done.map((d) => d.json),
          failed: failures.map(({ key, code, message }) => ({ key, code, message })),
          ...(run !== undefined ? { run, skipped: chosen.skipped } : {}),
        };
  return {
    human: lines.join('\n'),
    ...failureFields(failures),
    json,
  };
}
