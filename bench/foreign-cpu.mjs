// How much CPU the rest of the machine took while a stage ran: the interference a ratio must be read
// against. The 1-minute load average cannot tell it: a stage that keeps ssh, sshd and two Node
// processes busy on 2 cores raises the load above the core count by itself, on an otherwise idle box.
//
// From /proc, at the start and the end of a stage: the CPU time (user + system, with the children
// each reaped) of every process that is not the bench's. The bench's are the descendants of this
// process and any process whose command line names the bench's scratch directory (an ssh control
// master forks to the background and is re-parented to PID 1, but its ControlPath lies there). A
// process that dies during the stage is counted through its parent's reaped-children time, except
// those PID 1 reaps: orphans, which for the bench are its daemonized ssh masters, so PID 1's
// reaped-children time is left out (a foreign orphan that lives and dies within one stage is missed).
// Kernel threads count as foreign, the bench's own fsyncs' journal commits among them (small).
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

function read(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null; // the process ended between the listing and the read
  }
}

/** pid → { ppid, own: utime + stime, reaped: cutime + cstime } (ticks) for every live process. */
function processes() {
  const all = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    if (stat === null) continue;
    // after the command name, which may hold spaces and parentheses: state ppid … utime stime cutime cstime
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    all.set(Number(name), {
      ppid: Number(f[1]),
      own: Number(f[11]) + Number(f[12]),
      reaped: Number(f[13]) + Number(f[14]),
    });
  }
  return all;
}

/** The pids that are the bench's: descendants of `root`, and processes whose argv mentions `scratch`. */
function benchPids(all, root, scratch) {
  const mine = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, p] of all)
      if (!mine.has(pid) && mine.has(p.ppid)) {
        mine.add(pid);
        grew = true;
      }
  }
  for (const pid of all.keys()) {
    if (mine.has(pid)) continue;
    const argv = read(`/proc/${pid}/cmdline`);
    if (argv?.includes(scratch)) mine.add(pid);
  }
  return mine;
}

/** A snapshot of the CPU time of every process not the bench's, by pid. */
export function foreignSnapshot(scratch) {
  const all = processes();
  const mine = benchPids(all, process.pid, scratch);
  const ticks = new Map();
  for (const [pid, p] of all) {
    if (mine.has(pid)) continue;
    ticks.set(pid, p.own + (pid === 1 ? 0 : p.reaped));
  }
  return { at: process.hrtime.bigint(), ticks };
}

/**
 * The cores the rest of the machine used on average between two snapshots. A process only in the
 * second counts whole (it started during the stage); one only in the first counts nothing more (its
 * time after the first snapshot went to its parent's reaped time).
 */
export function foreignCores(before, after) {
  let ticks = 0;
  for (const [pid, t] of after.ticks) ticks += t - (before.ticks.get(pid) ?? 0);
  const seconds = Number(after.at - before.at) / 1e9;
  return seconds > 0 ? Math.max(0, ticks) / TICKS_PER_SECOND / seconds : 0;
}
