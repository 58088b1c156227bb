import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { diffWorkspace } from '../../src/remote/workspace-diff.js';

let ws: string;
beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), 'gj-ws-'));
  mkdirSync(join(ws, 'src'));
  writeFileSync(join(ws, 'src/a.py'), 'a\n');
});
afterEach(() => rmSync(ws, { recursive: true, force: true }));

const job = buildJob('x', [
  { path: 'src/a.py', sha256: sha256Hex('a\n') },
  { path: 'src/new/b.py', sha256: null },
]);

describe('diffWorkspace', () => {
  it('reports no outputs when nothing changed', async () => {
    expect(await diffWorkspace(ws, job)).toEqual({ ok: true, outputs: [] });
  });

  it('reports changed and created allowed files with their digests', async () => {
    writeFileSync(join(ws, 'src/a.py'), 'A\n');
    mkdirSync(join(ws, 'src/new'));
    writeFileSync(join(ws, 'src/new/b.py'), 'b\n');
    expect(await diffWorkspace(ws, job)).toEqual({
      ok: true,
      outputs: [
        { path: 'src/a.py', sha256: sha256Hex('A\n'), bytes: 2 },
        { path: 'src/new/b.py', sha256: sha256Hex('b\n'), bytes: 2 },
      ],
    });
  });

  it.each([
    {
      change: 'a file outside the allowed paths',
      act: () => writeFileSync(join(ws, 'src/evil.py'), 'x'),
      reason: /src\/evil\.py.*outside the allowed paths/,
    },
    {
      change: 'a stray directory',
      act: () => mkdirSync(join(ws, '__pycache__')),
      reason: /created directory "__pycache__"/,
    },
    {
      change: 'a deleted allowed file',
      act: () => unlinkSync(join(ws, 'src/a.py')),
      reason: /deleted allowed file "src\/a\.py"/,
    },
    {
      change: 'an allowed file replaced by a symlink',
      act: () => {
        unlinkSync(join(ws, 'src/a.py'));
        symlinkSync('/etc/passwd', join(ws, 'src/a.py'));
      },
      reason: /"src\/a\.py" is a symlink/,
    },
  ])('rejects $change with a reason naming the path', async ({ act, reason }) => {
    act();
    const got = await diffWorkspace(ws, job);
    expect(got.ok).toBe(false);
    expect(got.ok ? '' : got.reason).toMatch(reason);
  });

  it('rejects outputs over the job size cap', async () => {
    const small = { ...job, constraints: { max_file_bytes: 4, max_total_bytes: 100 } };
    writeFileSync(join(ws, 'src/a.py'), 'abcdefgh');
    const got = await diffWorkspace(ws, small);
    expect(got.ok ? '' : got.reason).toMatch(/over the job's max_file_bytes/);
  });
});
