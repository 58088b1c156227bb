// Ending every process a child started, without a PID namespace or a process group of its own: every
// process of the run carries a tag in its environment (GENJOB_RUN=<random>) and we sweep /proc for it,
// and for descendants of the run's first process, until none is left. A child that calls setpgid or
// setsid still inherits the tag; only one that both leaves the tree and clears its environment
// escapes (docs/trust.md says so). A generator run with --no-sandbox ends this way, and so does a git
// command run with a time limit (src/git/run-git.ts), which keeps the terminal's session and group.
import { readdirSync, readFileSync } from 'node:fs';
import { readText } from './read-text.js';

export const RUN_TAG_VAR = 'GENJOB_RUN';

function pids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return [];
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readText(`/proc/${pid}/stat`);
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function hasTag(pid: number, needle: Buffer): boolean {
  try {
    const env = readFileSync(`/proc/${pid}/environ`);
    return env.includes(needle) || env.subarray(0, needle.length - 1).equals(needle.subarray(1));
  } catch {
    return false;
  }
}

/** The processes of a run: those tagged with `tag`, and every descendant of `root`. */
export function runProcesses(tag: string, root: number | undefined): number[] {
  const needle = Buffer.from(`\0${RUN_TAG_VAR}=${tag}\0`);
  const all = pids().filter((p) => p !== process.pid);
  const parents = new Map(all.map((p) => [p, parentOf(p)]));
  const found = new Set<number>();
  if (root !== undefined) found.add(root);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [p, pp] of parents)
      if (!found.has(p) && pp !== undefined && found.has(pp)) {
        found.add(p);
        grew = true;
      }
  }
  for (const p of all) if (!found.has(p) && hasTag(p, needle)) found.add(p);
  return [...found].filter((p) => parents.has(p));
}

/** SIGKILL every process of the run, repeating while new ones appear (a fork racing the sweep). */
export function sweepRun(tag: string, root: number | undefined): number {
  let killed = 0;
  for (let round = 0; round < 20; round++) {
    const left = runProcesses(tag, round === 0 ? root : undefined);
    if (left.length === 0) break;
    for (const p of left) {
      try {
        process.kill(p, 'SIGKILL');
        killed += 1;
      } catch {
        // gone already
      }
    }
  }
  return killed;
}
