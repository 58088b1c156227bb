// A retention window or a time limit as the CLI spells it: a whole number and a unit, s m h d or w ("30d", "12h", "0s").
import { UsageError } from './errors.js';

/** The window gc and cache prune use when none is given. */
export const DEFAULT_RETENTION = '30d';

/**
 * The longest wait any option takes in seconds (a generator's or a check's time limit, a lease, a grace
 * period): a week. Node's timers hold ~24.8 days; past that one fires after 1 ms.
 */
export const MAX_WAIT_SECONDS = 7 * 24 * 3600;

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

export function parseDuration(text: string, flag = '--older-than'): number {
  const m = /^(\d{1,9})([smhdw])$/.exec(text.trim());
  if (!m)
    throw new UsageError(
      'EGJ_BAD_DURATION',
      `${flag} ${JSON.stringify(text)}: give a whole number and a unit, s m h d or w (e.g. 30d, 12h, 0s)`,
    );
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

/**
 * A time limit as the CLI spells it (30s, 10m, 2h): above zero and at most MAX_WAIT_SECONDS, in ms (a
 * longer one would overflow Node's timers and fire at once).
 */
export function parseWait(text: string, flag: string): number {
  const ms = parseDuration(text, flag);
  if (ms <= 0 || ms > MAX_WAIT_SECONDS * 1000)
    throw new UsageError(
      'EGJ_BAD_DURATION',
      `${flag} ${JSON.stringify(text)}: give a time above 0s and at most a week (${MAX_WAIT_SECONDS / 86_400}d)`,
    );
  return ms;
}
