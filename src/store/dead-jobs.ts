// Which keys are dead: a job file moved to dead/ is `dead/<key>.job.<stamp>` with its reason in
// `<name>.why.json` (see dead-letter.ts). Listing is one readdir; a reason is read only when asked,
// so counting dead jobs on a big .gen/ parses nothing. A key minted again after it died is alive.
import { join } from 'node:path';
import { readdirOrEmpty, readIfExists } from './durable.js';
import type { Store } from './store.js';

/** The code on the job file of a job stopped with `genjob cancel`. */
export const CANCELLED = 'EGJ_CANCELLED';
/** The code work records on a job whose input changed before it was shipped: `genjob remint` takes it. */
export const INPUT_CHANGED = 'EGJ_INPUT_CHANGED';

/** Why a job in dead/ may be retried: its job file is sound, only its run went wrong (or was stopped). */
export const RETRYABLE_DEAD: ReadonlyMap<string, string> = new Map([
  [CANCELLED, 'cancelled'],
  ['EGJ_ATTEMPTS_EXHAUSTED', 'out of attempts'],
  ['EGJ_GENERATION_IN_DOUBT', 'in doubt on its host'],
]);

/** What brings a dead job back, by the code that sent it to dead/: the one command that takes it. */
export function deadAdvice(key: string, code: string | undefined): string {
  const k = key.slice(0, 12);
  if (code !== undefined && RETRYABLE_DEAD.has(code)) return `genjob retry ${k} generates it again`;
  if (code === INPUT_CHANGED) return `genjob remint ${k} mints its successor from the current tree`;
  return `genjob show ${k} says what became of it`;
}

/** The reason a job whose input `what` changed before it was sent goes to dead/ with (INPUT_CHANGED). */
export function inputChangedReason(what: string, key: string): string {
  return `${what}: changed since the job was minted; the job is stale: ${deadAdvice(key, INPUT_CHANGED)}`;
}

export interface DeadJob {
  key: string;
  /** The newest `dead/<key>.job.<stamp>` of the key. */
  name: string;
  /** Milliseconds since the epoch from the name's stamp (0 when unreadable). */
  at: number;
}

/** A job file's name in dead/: `<key>.job.<stamp>-<hex>` (its key, then its stamp, as groups). */
export const DEAD_JOB_NAME = /^([0-9a-f]{64})\.job\.(\d+)-[0-9a-f]+$/;

/** One entry per key with a job file in dead/ (its newest), from the names alone. */
export function deadJobs(store: Store, names = readdirOrEmpty(store, store.layout.dir('dead'))): DeadJob[] {
  const byKey = new Map<string, DeadJob>();
  for (const name of names) {
    const m = DEAD_JOB_NAME.exec(name);
    if (!m) continue;
    const at = Number(m[2]);
    const had = byKey.get(m[1]!);
    if (!had || at >= had.at) byKey.set(m[1]!, { key: m[1]!, name, at });
  }
  return [...byKey.values()];
}

/** The key's newest job file in dead/, when it has one. */
export function deadJobOf(store: Store, key: string): DeadJob | undefined {
  return deadJobs(store).find((d) => d.key === key);
}

/** The why.json of a dead item ({code, reason, ...}), or null when there is none (an older genjob wrote the item first). */
export function deadReason(store: Store, name: string): { code: string; reason: string } | null {
  const why = deadWhy(store, name);
  return why === null ? null : { code: String(why.code ?? ''), reason: String(why.reason ?? '') };
}

/**
 * The whole reason published beside a dead item (`<name>.why.json`), as written; null when it is missing,
 * not JSON, or JSON null ({} for another value that is no object: it has no fields).
 */
export function deadWhy(store: Store, name: string): Record<string, unknown> | null {
  const bytes = readIfExists(store, join(store.layout.dir('dead'), `${name}.why.json`));
  if (!bytes) return null;
  let why: unknown;
  try {
    why = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  return why === null ? null : typeof why === 'object' ? (why as Record<string, unknown>) : {};
}
