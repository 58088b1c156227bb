// `npm run demo` (scripts/demo.mjs after the build) runs the whole loop on the bundled toy
// repository with the deterministic demo generator, checks the job with the repository's tests and
// gates its apply on them, shows the diff it applied, ends with the run gate's verdict over the tests
// and writes the run's report.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { PKG } from './helpers.js';

describe('the demo script', () => {
  it('runs mint --each → status → work → verify → check → apply --require-check → apply, prints the diff and the run gate, ends with the report, exit 0', async () => {
    const r = await execa(process.execPath, [join(PKG, 'scripts', 'demo.mjs')], { cwd: PKG, reject: false });
    expect(r.exitCode).toBe(0);
    const order = [
      '$ genjob mint',
      '$ genjob status',
      '$ genjob work --once',
      '$ genjob verify',
      '$ genjob check',
      '$ genjob apply',
      '$ git diff',
      '$ genjob gate --run demo --require-check tests',
      '$ genjob report --run demo --out ',
    ];
    const at = order.map((s) => r.stdout.indexOf(s));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(r.stdout).toMatch(/^[0-9a-f]{12} {2}tests {2}pass {7}✓ /m);
    expect(r.stdout).toContain('--require-check tests');
    expect(r.stdout).toContain('already applied');
    expect(r.stdout).toContain('run demo is already sealed with this job');
    expect(r.stdout).toContain('+def fetch_user(user_id, timeout=10):');
    expect(r.stdout).toContain('+def test_fetch_user_has_a_timeout_default():');
    expect(r.stdout).toMatch(
      /demo ok: the job [0-9a-f]{12} was minted, worked, verified, checked and applied exactly once; gate demo: met: 1\/1 = 100\.0%\nreport: (\/\S+\/index\.html)$/,
    );
    const index = /report: (\S+)$/.exec(r.stdout)![1]!;
    const page = readFileSync(index, 'utf8');
    expect(page).toContain('<title>genjob report: run demo</title>');
    // the gate just closed, as its record says, and still current
    expect(page).toContain('<b class="gate-closed" id="gate-state">closed: met</b></td>');
    rmSync(join(index, '..'), { recursive: true, force: true });
  });
});
