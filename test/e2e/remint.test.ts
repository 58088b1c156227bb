// Remint, through the built CLI: two jobs allow one file (mint warns); the first applied, the second is
// stale; `genjob remint` mints its successor from the current tree, the old job goes to dead/ as
// superseded (show links both), the run now stands for the successor, which is worked and applies on
// top of the first. `apply --all --remint-stale` does the same for every stale job it meets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { json, mod, runBox } from './run-helpers.js';

describe('genjob remint', () => {
  it('mints the successor of a stale job, which the run then counts and which applies', async () => {
    const sb = await runBox(1);
    const first = json<{ key: string }>(await sb.genjob(['mint', '--json', '-m', 'First', mod(0)]));
    const second = await sb.genjob([
      'mint',
      '--each',
      mod(0),
      '-m',
      'Second {stem}',
      '--run',
      'rm',
      '--json',
    ]);
    expect(second.stderr).toContain(
      `genjob: warning: ${mod(0)} is allowed by queued job ${first.key.slice(0, 12)}; jobs writing one file fight (the second to apply goes stale)\n`,
    );
    const stale = json<{ jobs: Array<{ key: string }> }>(second).jobs[0]!.key;
    expect((await sb.genjob(['work', '--drain', '--quiet', ...sb.gen])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', first.key])).exitCode).toBe(0);
    const refused = await sb.genjob(['apply', '--run', 'rm']);
    expect(refused.exitCode).toBe(4);
    expect(refused.stderr).toMatch(/^genjob: EGJ_STALE: mod\/m00\.py: the repository changed under the job/);

    const re = json<{ key: string; successor: string; dead: string[] }>(
      await sb.genjob(['remint', stale.slice(0, 12), '--json']),
    );
    const next = re.successor;
    expect(re).toMatchObject({ key: stale, minted: true });
    expect(re.dead.map((d) => d.replace(/\.\d+-[0-9a-f]+$/, ''))).toEqual([
      `${stale}.job`,
      `${stale}.receipt`,
      `${stale}.out`,
    ]);
    const oldShow = await sb.genjob(['show', stale]);
    expect(oldShow.stdout).toContain(`reason    EGJ_SUPERSEDED: superseded by ${next}\n`);
    expect((await sb.genjob(['show', next])).stdout).toContain(` reminted: successor of ${stale}`);
    const successorJob = JSON.parse(readFileSync(join(sb.repo, '.gen', 'queue', `${next}.json`), 'utf8'));
    expect(successorJob.instruction).toBe('Second m00');

    // the run stands for the successor now: open while it is queued, then met, and it applies
    expect((await sb.genjob(['status', '--run', 'rm'])).stdout).toMatch(
      /^run rm: 1 job\(s\) \(\.gen\/runs\/rm\.json\); reminted ones shown as their successors\nqueue 1 /,
    );
    expect((await sb.genjob(['gate', '--run', 'rm'])).exitCode).toBe(75);
    expect((await sb.genjob(['work', '--run', 'rm', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const gate = json<{ failed: unknown[]; passed: number }>(
      await sb.genjob(['gate', '--run', 'rm', '--json']),
    );
    expect([gate.passed, gate.failed]).toEqual([1, []]);
    expect((await sb.genjob(['apply', '--run', 'rm', '--gated'])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe(
      '# module 0\n# done: First\n# done: Second m00\n',
    );

    const notStale = await sb.genjob(['remint', first.key]);
    expect([notStale.exitCode, notStale.stderr]).toEqual([
      4,
      expect.stringMatching(/^genjob: EGJ_NOT_REMINTABLE: /),
    ]);
  });

  it('apply --all --remint-stale remints every stale job it meets and applies the rest', async () => {
    const sb = await runBox(2);
    const keys = [];
    for (const text of ['One', 'Two', 'Three'])
      keys.push(json<{ key: string }>(await sb.genjob(['mint', '--json', '-m', text, mod(1)])).key);
    expect((await sb.genjob(['work', '--drain', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const r = await sb.genjob(['apply', '--all', '--remint-stale']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.match(/stale: reminted as [0-9a-f]{12} \(generate it with genjob work\)/g)).toHaveLength(
      2,
    );
    expect(r.stdout).toMatch(/\n2 stale job\(s\) reminted: genjob work generates their successors\n$/);
    expect((await sb.genjob(['work', '--drain', '--quiet', ...sb.gen])).exitCode).toBe(0);
    // one successor applies; the other is stale again against it, and is reminted in turn
    const again = await sb.genjob(['apply', '--all', '--remint-stale']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect((await sb.genjob(['work', '--drain', '--quiet', ...sb.gen])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', '--all'])).exitCode).toBe(0);
    const text = readFileSync(join(sb.repo, mod(1)), 'utf8');
    for (const t of ['One', 'Two', 'Three']) expect(text).toContain(`# done: ${t}\n`);
  });
});
