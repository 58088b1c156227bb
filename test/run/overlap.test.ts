// Which paths two jobs would fight over (src/run/overlap.ts): a path several jobs of one mint allow, or one
// a queued, running or received job already allows; applied and dead jobs, and the same job minted again,
// are no rivals. The warning is one line per path, names the jobs, and escapes what a terminal would run.
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { overlapLines, overlaps } from '../../src/run/overlap.js';
import { moveState } from '../../src/store/durable.js';
import { mintJob } from '../../src/store/mint-job.js';
import { tempStore } from '../helpers/temp-store.js';

const job = (text: string, paths: string[]) =>
  buildJob(
    text,
    paths.map((path) => ({ path, sha256: null })),
  );

describe('overlapping allowed paths', () => {
  it('finds paths allowed by several jobs of the mint and by live jobs in the store', () => {
    const store = tempStore('genjob-ovl-');
    const queued = mintJob(store, job('queued', ['a.py', 'q.py'])).key;
    const received = mintJob(store, job('received', ['b.py'])).key;
    moveState(store, store.layout.jobFile('queue', received), store.layout.jobFile('received', received));
    const applied = mintJob(store, job('applied', ['c.py'])).key;
    moveState(store, store.layout.jobFile('queue', applied), store.layout.jobFile('applied', applied));
    const mine = [
      job('one', ['a.py', 'shared.py']),
      job('two', ['b.py', 'shared.py']),
      job('three', ['c.py']),
    ];
    expect(overlaps(store, mine)).toEqual([
      { path: 'a.py', minting: [mine[0]!.key], others: [{ key: queued, state: 'queue' }] },
      { path: 'b.py', minting: [mine[1]!.key], others: [{ key: received, state: 'received' }] },
      { path: 'shared.py', minting: [mine[0]!.key, mine[1]!.key], others: [] },
    ]);
    // the same job minted again is not its own rival
    expect(overlaps(store, [job('queued', ['a.py', 'q.py'])])).toEqual([]);
  });

  it('says so in one line per path, naming the jobs, at most ten and a count', () => {
    const store = tempStore('genjob-ovl-');
    const others = Array.from({ length: 5 }, (_, i) => mintJob(store, job(`o${i}`, ['x.py'])).key).sort();
    const found = overlaps(store, [job('mine', ['x.py'])]);
    expect(overlapLines(found)).toBe(
      `genjob: warning: x.py is allowed by queued job ${others[0]!.slice(0, 12)}, queued job ${others[1]!.slice(0, 12)}, queued job ${others[2]!.slice(0, 12)}, 2 more; jobs writing one file fight (the second to apply goes stale)\n`,
    );
    const many = Array.from({ length: 12 }, (_, i) => ({ path: `p${i}`, minting: ['a', 'b'], others: [] }));
    const lines = overlapLines(many).split('\n');
    expect(lines).toHaveLength(12);
    expect(lines[10]).toBe('genjob: warning: … and 2 more path(s) allowed twice');
  });

  it('escapes control characters in a path before it reaches the terminal (inject)', () => {
    const line = overlapLines([{ path: 'a\u001b[2Jb.py', minting: ['k1', 'k2'], others: [] }]);
    expect(line).not.toContain('\u001b');
    expect(line).toContain('a\\x1b[2Jb.py');
  });
});
