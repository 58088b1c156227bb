// The run gate's --require-check through the built CLI, against the real checks plane: records made by
// `genjob check --run` (confined, on HEAD plus each job's outputs). A key whose check fails is counted
// against the rate, never as a pass; a key with no record keeps the gate open (75); when HEAD moves every
// record goes stale, the gate is open again and `apply --gated` refuses the record it closed before; a
// --require-check naming no declared checker is refused rather than waited on forever. One repository.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { json, mintRun, mod, type RunBox, runBox } from './run-helpers.js';

interface Closed {
  state: string;
  verdict: string;
  passed: number;
  total: number;
  rate: string;
  failed: Array<{ key: string; why: string }>;
  record: { file: string; seq: number };
}

// the job of m01 fails the checker (its output names m01); the others pass
const CHECKERS = { checkers: { tests: { run: '! grep -rq "done: Edit m01" mod' } } };
const IDENTITY = ['-c', 'user.name=Test', '-c', 'user.email=test@example.com'];

let sb: RunBox;
let jobs: Array<{ path: string; key: string }>;

// one repository for the whole story: the temp dir of a sandbox lives as long as the test that made it
async function world(): Promise<void> {
  sb = await runBox(3);
  writeFileSync(join(sb.repo, 'genjob.config.json'), `${JSON.stringify(CHECKERS)}\n`);
  await execa('git', ['add', '-A'], { cwd: sb.repo });
  await execa('git', [...IDENTITY, 'commit', '-qm', 'modules and a checker'], { cwd: sb.repo });
  jobs = await mintRun(sb, 'c');
  const work = await sb.genjob(['work', '--run', 'c', '--quiet', ...sb.gen]);
  if (work.exitCode !== 0) throw new Error(`work: ${work.stderr}`);
}

describe('gate --require-check over the checks plane', () => {
  it('waits for records, counts a failed check against the rate, and opens again when HEAD moves', async () => {
    await world();
    // open while ok receipts have no record; a checker that is not declared is refused
    const open = await sb.genjob(['gate', '--run', 'c', '--require-check', 'tests', '--json']);
    expect(open.exitCode).toBe(75);
    const waiting = JSON.parse(open.stdout).waiting as Array<{ key: string; why: string }>;
    expect(waiting.map((w) => [w.key, w.why])).toEqual(jobs.map((j) => [j.key, 'no tests record yet']));

    const typo = await sb.genjob(['gate', '--run', 'c', '--require-check', 'tets']);
    expect([typo.exitCode, typo.stderr]).toEqual([
      2,
      expect.stringMatching(/^genjob: EGJ_CHECKER_UNKNOWN: --require-check tets: .*it declares tests/),
    ]);

    // a key whose check failed counts against the rate, and apply --gated leaves it out
    const checked = await sb.genjob(['check', '--run', 'c']);
    expect(checked.exitCode, checked.stderr).toBe(3); // one fail
    expect(checked.stdout).toMatch(new RegExp(`^${jobs[1]!.key.slice(0, 12)}  tests {2}fail `, 'm'));

    const gate = await sb.genjob(['gate', '--run', 'c', '--require-check', 'tests', '--json']);
    const closed = json<Closed>(gate, 3); // 2/3 under 100%
    expect([closed.state, closed.verdict, closed.rate]).toEqual(['closed', 'not-met', '2/3 = 66.6%']);
    expect(closed.failed).toEqual([{ key: jobs[1]!.key, pass: false, why: 'tests: fail' }]);
    // the record names each check record it used, by digest
    const record = JSON.parse(readFileSync(closed.record.file, 'utf8'));
    expect(record.policy.require_checks).toEqual(['tests']);
    expect(
      record.keys.map((k: { checks: Array<{ verdict: string; current: boolean }> }) => k.checks),
    ).toEqual(
      ['pass', 'fail', 'pass'].map((verdict) => [
        { checker: 'tests', current: true, record: expect.stringMatching(/^[0-9a-f]{64}$/), verdict },
      ]),
    );
    // without the check, the same receipts pass: the check is what failed it
    expect((await sb.genjob(['gate', '--run', 'c'])).exitCode).toBe(0);

    const met = json<Closed>(
      await sb.genjob(['gate', '--run', 'c', '--require-check', 'tests', '--min-pass', '0.6', '--json']),
    );
    expect([met.verdict, met.rate]).toEqual(['met', '2/3 = 66.6%']);
    const gated = json<{ results: Array<{ key: string; status: string }> }>(
      await sb.genjob(['apply', '--run', 'c', '--gated', '--dry-run', '--json']),
    );
    expect(gated.results.map((r) => [r.key, r.status])).toEqual([
      [jobs[0]!.key, 'dry-run'],
      [jobs[2]!.key, 'dry-run'],
    ]);

    // HEAD moves: every record is stale, the gate is open again and apply --gated refuses the old record
    writeFileSync(join(sb.repo, 'notes.txt'), 'HEAD moves\n');
    await execa('git', ['add', 'notes.txt'], { cwd: sb.repo });
    await execa('git', [...IDENTITY, 'commit', '-qm', 'another commit'], { cwd: sb.repo });

    const reopened = await sb.genjob([
      'gate',
      '--run',
      'c',
      '--require-check',
      'tests',
      '--min-pass',
      '0.6',
      '--json',
    ]);
    expect(reopened.exitCode).toBe(75);
    const stales = JSON.parse(reopened.stdout).waiting as Array<{ why: string }>;
    expect(stales.map((w) => w.why)).toEqual(Array(3).fill('its tests record is stale'));

    const stale = await sb.genjob(['apply', '--run', 'c', '--gated']);
    expect([stale.exitCode, stale.stderr]).toEqual([
      4,
      expect.stringMatching(/^genjob: EGJ_GATE_STALE: .*gate record \d+ of run c is stale/),
    ]);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe('# module 0\n');

    // checked again on the new HEAD: the same verdicts, a new record
    expect((await sb.genjob(['check', '--run', 'c'])).exitCode).toBe(3);
    const again = json<Closed>(
      await sb.genjob(['gate', '--run', 'c', '--require-check', 'tests', '--min-pass', '0.6', '--json']),
    );
    expect([again.verdict, again.rate, again.failed.map((f) => f.key)]).toEqual([
      'met',
      '2/3 = 66.6%',
      [jobs[1]!.key],
    ]);
  });
});
