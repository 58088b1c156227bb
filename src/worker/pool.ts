// The generator hosts of a run and their slots. Jobs go to a free slot on any host that is up; a
// host whose session cannot be opened (or that refuses a run) is marked down with a doubling
// back-off from --host-backoff (its slots stop claiming) and retired after MAX_FAILURES failures in
// a row. A job in doubt on a host — its bundle was delivered, its answer lost — is taken only by
// that host (whose cache may hold the answer: never pay twice) until --in-doubt-after has passed,
// or when that host is not in this pool.
import { UsageError } from '../core/errors.js';
import { readInDoubt } from '../store/in-doubt.js';
import type { Store } from '../store/store.js';
import type { ServeLauncher } from '../transport/launcher.js';
import type { ServeClient } from './serve-client.js';

/** The first wait after a host failed (work --host-backoff); each failure in a row doubles it. */
export const BACKOFF_BASE_MS = 1000;
export const BACKOFF_MAX_MS = 60_000;
/** Consecutive failures (about a minute of back-off) after which a host takes no more jobs this run. */
export const MAX_FAILURES = 7;
export const DEFAULT_IN_DOUBT_AFTER_S = 300;

/** `N/spec` (GNU parallel's `--sshlogin 4/host`): N slots on spec; a bare spec gets `defaultSlots`. */
export function parseSlots(
  spec: string,
  defaultSlots: number,
  flag: string,
): { slots: number; spec: string } {
  const m = /^(\d+)\/(.*)$/s.exec(spec);
  // nothing after the count (`2/`), or nothing at all (a script's unset variable)
  if ((m === null ? spec : m[2]!).trim() === '')
    throw new UsageError(
      'EGJ_USAGE',
      `${flag} ${JSON.stringify(spec)}: names no ${flag === '--launch' ? 'command' : 'host'}`,
    );
  if (m === null) return { slots: defaultSlots, spec };
  const slots = Number(m[1]);
  if (!Number.isSafeInteger(slots) || slots < 1 || slots > 1024)
    throw new UsageError('EGJ_USAGE', `${flag} ${spec}: the slot count before "/" must be 1 to 1024`);
  return { slots, spec: m[2]! };
}

export interface HostCounts {
  received: number;
  requeued: number;
  dead: number;
  other: number;
}

export class PoolHost {
  failures = 0;
  downUntil = 0;
  retired: string | undefined;
  /** The pre-flight session, handed to the first slot that needs one. */
  spare: ServeClient | undefined;
  readonly counts: HostCounts = { received: 0, requeued: 0, dead: 0, other: 0 };

  constructor(
    readonly launcher: ServeLauncher,
    readonly slots: number,
    /** The first back-off; each failure in a row doubles it, up to BACKOFF_MAX_MS. */
    readonly backoffBaseMs = BACKOFF_BASE_MS,
  ) {}

  get destination(): string {
    return this.launcher.destination;
  }

  isDown(now = Date.now()): boolean {
    return this.retired !== undefined || now < this.downUntil;
  }

  /** Record a failure to reach the host; returns how long it is down. */
  markDown(reason: string, now = Date.now()): number {
    this.failures += 1;
    if (this.failures >= MAX_FAILURES) this.retired = reason;
    const ms = Math.min(BACKOFF_MAX_MS, this.backoffBaseMs * 2 ** (this.failures - 1));
    this.downUntil = now + ms;
    return ms;
  }

  /** A session opened again: slots may claim, but the failures in a row count on until a job reaches a generator. */
  markReachable(): void {
    this.downUntil = 0;
  }

  markUp(): void {
    this.failures = 0;
    this.downUntil = 0;
  }
}

export class Pool {
  readonly hosts: PoolHost[];
  private readonly byDestination: Map<string, PoolHost>;

  constructor(
    hosts: PoolHost[],
    readonly inDoubtAfterMs: number,
  ) {
    this.hosts = hosts;
    this.byDestination = new Map();
    for (const h of hosts) {
      if (this.byDestination.has(h.destination))
        throw new UsageError(
          'EGJ_USAGE',
          `${h.destination} is given twice; give it once with a slot count (N/${h.destination})`,
        );
      this.byDestination.set(h.destination, h);
    }
  }

  /** Whether `host` may take `key` now (in-doubt routing). */
  accepts(store: Store, host: PoolHost, key: string, now = Date.now()): boolean {
    const doubt = readInDoubt(store, key);
    if (doubt === undefined || doubt.destination === host.destination) return true;
    const owner = this.byDestination.get(doubt.destination);
    if (owner === undefined || owner.retired !== undefined) return true;
    return now - Date.parse(doubt.since) >= this.inDoubtAfterMs;
  }

  get slotCount(): number {
    return this.hosts.reduce((n, h) => n + h.slots, 0);
  }
}
