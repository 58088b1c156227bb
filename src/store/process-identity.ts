// Who a process is: pid plus its start time, so a recorded owner (a lock, a lease, a temp file) can be
// known to be gone at once instead of after a timeout. A pid alone can be reused; pid + start time cannot.
// Start times come from /proc (Linux); elsewhere only the pid is checked.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { errnoOf } from '../core/errors.js';

export interface ProcessId {
  host: string;
  pid: number;
  /** The process's start, in clock ticks since boot (/proc/<pid>/stat field 22); 0 when unknown. */
  start: number;
}

/** The start of `pid` in clock ticks since boot, 0 when it cannot be read, undefined when no such process. */
export function processStart(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // the command name (field 2) may hold spaces and parentheses: count fields after its last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]) || 0;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return pidAlive(pid) ? 0 : undefined;
    return 0;
  }
}

/** Whether a process `pid` exists (one of another user's counts: EPERM says it is there). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoOf(err) === 'EPERM';
  }
}

let self: ProcessId | undefined;

export function thisProcess(): ProcessId {
  self ??= { host: hostname(), pid: process.pid, start: processStart(process.pid) ?? 0 };
  return self;
}

/**
 * True only when `owner` certainly no longer runs: it ran on this host, and its pid is gone or now
 * belongs to a process started at another time. An owner on another host is never judged gone here.
 */
export function ownerGone(owner: Partial<ProcessId>): boolean {
  if (owner.host !== hostname() || !Number.isSafeInteger(owner.pid) || (owner.pid as number) <= 0)
    return false;
  const start = processStart(owner.pid as number);
  if (start === undefined) return true;
  return Boolean(owner.start) && start !== 0 && start !== owner.start;
}
