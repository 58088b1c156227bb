// apply --diff prints what it wrote; verify --all reports every failing job with the worst exit code;
// apply --all goes on past a failure and names each one (--stop-on-first stops at the first).
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEMO_GENERATOR, makeSandbox, mintKey, type Sandbox, snapshot } from './helpers.js';

const FILES = ['README.md', 'src/user.py', 'tests/test_user.py'];

/** Three received jobs, one per file, sorted by key. */
async function threeReceived(sb: Sandbox): Promise<string[]> {
  const keys = [];
  for (const [i, path] of FILES.entries()) keys.push(await mintKey(sb, `Note number ${i}`, [path]));
  expect((await sb.genjob(['work', '--drain', '--quiet', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
  return keys.sort();
}

function tamper(sb: Sandbox, key: string): void {
  const out = join(sb.repo, '.gen', 'out', key);
  const path = FILES.find((f) => {
    try {
      readFileSync(join(out, f));
      return true;
    } catch {
      return false;
    }
  })!;
  appendFileSync(join(out, path), 'smuggled\n');
}

describe('apply --diff without --dry-run', () => {
  it('writes the change and prints the diff of what it wrote', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a timeout to fetch_user', ['src/user.py']);
    await sb.genjob(['work', '--once', '--quiet', '--generator', DEMO_GENERATOR]);
    const r = await sb.genjob(['apply', key, '--diff']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/applied 1 file\(s\):\n {2}update src\/user\.py\n/);
    expect(r.stdout).toContain('+++ b/src/user.py');
    expect(r.stdout).toContain('-def fetch_user(user_id):');
    expect(r.stdout).toContain('+def fetch_user(user_id, timeout=10):');
    expect(readFileSync(join(sb.repo, 'src/user.py'), 'utf8')).toContain('timeout=10');
    const json = JSON.parse((await sb.genjob(['apply', key, '--diff', '--json'])).stdout);
    expect(json.results[0].status).toBe('already-applied');
  });
});

describe('verify --all', () => {
  it('reports every failing job, one stderr line each, and exits with the worst code', async () => {
    const sb = await makeSandbox();
    const [a, b, c] = await threeReceived(sb);
    tamper(sb, a!);
    tamper(sb, c!);
    const r = await sb.genjob(['verify', '--all']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe(
      `${a!.slice(0, 12)} FAILED: EGJ_ARTIFACT_DRIFT\n${b!.slice(0, 12)} ok: 1 output(s), epoch 1\n${c!.slice(0, 12)} FAILED: EGJ_ARTIFACT_DRIFT\n2 of 3 job(s) failed verification: ${a!.slice(0, 12)} (EGJ_ARTIFACT_DRIFT), ${c!.slice(0, 12)} (EGJ_ARTIFACT_DRIFT)\n`,
    );
    const errs = r.stderr.trimEnd().split('\n');
    expect(errs).toHaveLength(2);
    expect(errs[0]).toMatch(new RegExp(`^genjob: EGJ_ARTIFACT_DRIFT: .*out/${a}/`));
    expect(errs[1]).toMatch(new RegExp(`^genjob: EGJ_ARTIFACT_DRIFT: .*out/${c}/`));
    const json = JSON.parse((await sb.genjob(['verify', '--all', '--json'])).stdout);
    expect(json).toMatchObject({ ok: false, verified: [{ key: b }], failed: [{ key: a }, { key: c }] });
    // a failure, like every failure: the worst entry's code and a summary at the top
    expect(json).toMatchObject({
      code: 'EGJ_ARTIFACT_DRIFT',
      message: `2 of 3 job(s) failed verification: ${a!.slice(0, 12)} (EGJ_ARTIFACT_DRIFT), ${c!.slice(0, 12)} (EGJ_ARTIFACT_DRIFT)`,
    });
  });
});

describe('apply --all', () => {
  it('goes on past a job that fails, like make -k, and ends naming each failure (exit: the worst)', async () => {
    const sb = await makeSandbox();
    const [a, b, c] = await threeReceived(sb);
    tamper(sb, a!);
    const r = await sb.genjob(['apply', '--all']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toMatch(new RegExp(`^${a!.slice(0, 12)} not applied \\(EGJ_ARTIFACT_DRIFT\\)\n`));
    expect(r.stdout).toContain(`\n${b!.slice(0, 12)} applied 1 file(s):\n`);
    expect(r.stdout).toContain(`\n${c!.slice(0, 12)} applied 1 file(s):\n`);
    expect(r.stdout).toMatch(
      new RegExp(`\n1 of 3 job\\(s\\) not applied: ${a!.slice(0, 12)} \\(EGJ_ARTIFACT_DRIFT\\)\n$`),
    );
    expect(r.stderr).toMatch(/^genjob: EGJ_ARTIFACT_DRIFT: [^\n]*\n$/);
    const json = JSON.parse((await sb.genjob(['apply', '--all', '--json'])).stdout);
    expect(json).toMatchObject({ ok: false, code: 'EGJ_ARTIFACT_DRIFT', failed: [{ key: a }] });
  });

  it('with --stop-on-first, prints each job it applied before the one that stopped it', async () => {
    const sb = await makeSandbox();
    const [a, b, c] = await threeReceived(sb);
    tamper(sb, b!);
    const r = await sb.genjob(['apply', '--all', '--stop-on-first']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toMatch(new RegExp(`^${a!.slice(0, 12)} applied 1 file\\(s\\):\n`));
    expect(r.stdout).toContain(
      `\n${b!.slice(0, 12)} not applied (EGJ_ARTIFACT_DRIFT); stopped, 1 job(s) not tried\n`,
    );
    expect(r.stdout).not.toContain(`${c!.slice(0, 12)} applied`);
    expect(r.stderr).toMatch(/^genjob: EGJ_ARTIFACT_DRIFT: /);
  });
});

describe('apply --all --dry-run', () => {
  it('exits as the real run does: 4 when a job it would apply first makes a later one stale, writing nothing', async () => {
    const sb = await makeSandbox();
    // two jobs on one file: whichever applies first changes the other's input
    const keys = [
      await mintKey(sb, 'Add a timeout to fetch_user', ['src/user.py']),
      await mintKey(sb, 'Note one more thing', ['src/user.py']),
    ].sort();
    expect((await sb.genjob(['work', '--drain', '--quiet', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
    const tree = snapshot(sb.repo);
    const dry = await sb.genjob(['apply', '--all', '--dry-run']);
    expect(snapshot(sb.repo)).toEqual(tree);
    const real = await sb.genjob(['apply', '--all']);
    expect(real.exitCode).toBe(4);
    expect(dry.exitCode).toBe(real.exitCode);
    expect(dry.stderr).toBe(real.stderr);
    expect(dry.stdout).toMatch(
      new RegExp(
        `^${keys[0]!.slice(0, 12)} would write 1 file\\(s\\):\\n {2}update src/user\\.py\\n${keys[1]!.slice(0, 12)} would not apply \\(EGJ_STALE\\)\\n1 of 2 job\\(s\\) not applied: ${keys[1]!.slice(0, 12)} \\(EGJ_STALE\\)\\n$`,
      ),
    );
    expect(real.stderr).toMatch(/^genjob: EGJ_STALE: .*src\/user\.py: the repository changed under the job/);
  });
});
