// Revert is a visible state: after `revert` the job is in reverted/ and status and show say so;
// `apply` writes it again (after verify and the stale check), `revert` again says it already is,
// and `drop` takes it to dead/.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { genDir, makeSandbox, mintKey, type Sandbox, snapshot } from './helpers.js';

async function appliedJob(sb: Sandbox): Promise<string> {
  const gen = sb.script('note.sh', "echo '# noted' >> README.md");
  const key = await mintKey(sb, 'Note it', ['README.md']);
  expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
  expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
  return key;
}

describe('a reverted job', () => {
  it('is reverted in status and show, and apply writes it again', async () => {
    const sb = await makeSandbox();
    const original = snapshot(sb.repo);
    const key = await appliedJob(sb);
    const applied = snapshot(sb.repo);
    expect(applied).not.toEqual(original);

    const r = await sb.genjob(['revert', key]);
    expect(r).toMatchObject({
      exitCode: 0,
      stdout: `${key.slice(0, 12)} reverted 1 file(s):\n  restored README.md\n`,
    });
    expect(snapshot(sb.repo)).toEqual(original);
    expect(genDir(sb, 'applied')).toEqual([]);
    expect(genDir(sb, 'reverted')).toEqual([`${key}.json`]);
    const status = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(status.counts).toMatchObject({ applied: 0, reverted: 1 });
    expect(status.jobs).toMatchObject([{ key, state: 'reverted' }]);
    expect((await sb.genjob(['show', key])).stdout).toMatch(/^state\s+reverted$/m);

    const again = await sb.genjob(['revert', key]);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toMatch(/already reverted/);
    expect(snapshot(sb.repo)).toEqual(original);

    const reapplied = await sb.genjob(['apply', key]);
    expect(reapplied.exitCode).toBe(0);
    expect(reapplied.stdout).toMatch(/applied 1 file\(s\):\n {2}update README\.md/);
    expect(snapshot(sb.repo)).toEqual(applied);
    expect(genDir(sb, 'applied')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'reverted')).toEqual([]);
    expect((await sb.genjob(['apply', key])).stdout).toMatch(/already applied/);
  });

  it('puts back the mode an executable output replaced, not only the bytes', async () => {
    const sb = await makeSandbox();
    const original = snapshot(sb.repo);
    const gen = sb.script('exec.sh', "echo '# noted' >> README.md; chmod +x README.md");
    const key = await mintKey(sb, 'Make it a script', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    expect(snapshot(sb.repo).get('README.md')).toMatch(/^file 755 /);
    expect((await sb.genjob(['revert', key])).exitCode).toBe(0);
    expect(snapshot(sb.repo)).toEqual(original);
  });

  it('is not applied again when its input changed since (stale, exit 4, nothing written)', async () => {
    const sb = await makeSandbox();
    const key = await appliedJob(sb);
    await sb.genjob(['revert', key]);
    writeFileSync(join(sb.repo, 'README.md'), 'edited by hand\n');
    const before = snapshot(sb.repo);
    const r = await sb.genjob(['apply', key]);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/README\.md/);
    expect(snapshot(sb.repo)).toEqual(before);
    expect(genDir(sb, 'reverted')).toEqual([`${key}.json`]);
  });

  it('can be dropped: its record, receipt and outputs go to dead/', async () => {
    const sb = await makeSandbox();
    const key = await appliedJob(sb);
    await sb.genjob(['revert', key]);
    const r = await sb.genjob(['drop', key, '--reason', 'not wanted']);
    expect(r.exitCode).toBe(0);
    expect(genDir(sb, 'reverted')).toEqual([]);
    expect(
      genDir(sb, 'dead')
        .filter((n) => !n.endsWith('.why.json'))
        .map((n) => n.split('.')[1]),
    ).toEqual(['job', 'out', 'receipt']);
    expect(readFileSync(join(sb.repo, 'README.md'), 'utf8')).not.toMatch(/# noted/);
  });
});
