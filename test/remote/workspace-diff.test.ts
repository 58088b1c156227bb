import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { diffWorkspace, knownFiles } from '../../src/remote/workspace-diff.js';
import { HeldWorkspace } from '../../src/remote/workspace-handle.js';

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

  it('marks an output the generator made executable, and only that one', async () => {
    writeFileSync(join(ws, 'src/a.py'), 'A\n');
    mkdirSync(join(ws, 'src/new'));
    writeFileSync(join(ws, 'src/new/b.py'), '#!/bin/sh\n');
    chmodSync(join(ws, 'src/new/b.py'), 0o744);
    expect(await diffWorkspace(ws, job)).toEqual({
      ok: true,
      outputs: [
        { path: 'src/a.py', sha256: sha256Hex('A\n'), bytes: 2 },
        { path: 'src/new/b.py', sha256: sha256Hex('#!/bin/sh\n'), bytes: 10, executable: true },
      ],
    });
  });

  it('says nothing of a file made executable with its bytes unchanged (not an output)', async () => {
    chmodSync(join(ws, 'src/a.py'), 0o755);
    expect(await diffWorkspace(ws, job)).toEqual({ ok: true, outputs: [] });
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

  it('refuses a file over the cap from its size alone, before reading a byte of it (a sparse 64 GiB file)', async () => {
    truncateSync(join(ws, 'src/a.py'), 64 * 1024 ** 3);
    const got = await diffWorkspace(ws, job);
    expect(got).toEqual({
      ok: false,
      reason: `"src/a.py" is ${64 * 1024 ** 3} bytes, over the job's max_file_bytes`,
    });
  });

  it('rejects a FIFO at an allowed path without opening it', async () => {
    unlinkSync(join(ws, 'src/a.py'));
    execFileSync('mkfifo', [join(ws, 'src/a.py')]);
    expect(await diffWorkspace(ws, job)).toEqual({
      ok: false,
      reason: '"src/a.py" is a FIFO; only regular files may be outputs',
    });
  });

  it('tamper: a workspace held open and then swapped for a link to a decoy is rejected; the decoy is not read', async () => {
    const held = HeldWorkspace.open(ws);
    try {
      const decoy = mkdtempSync(join(tmpdir(), 'gj-decoy-'));
      mkdirSync(join(decoy, 'src'));
      writeFileSync(join(decoy, 'src/a.py'), 'DECOY\n');
      renameSync(ws, `${ws}.gone`);
      symlinkSync(decoy, ws);
      const got = await diffWorkspace(held, job);
      expect(got).toEqual({
        ok: false,
        reason: `the generator replaced its workspace ${ws} (it is now a symlink); nothing was read through it`,
      });
      rmSync(ws);
      renameSync(`${ws}.gone`, ws);
      rmSync(decoy, { recursive: true });
    } finally {
      held.close();
    }
  });

  describe("with the extraction's stat", () => {
    // A digest the file does not have: when the diff reports it, the file was not read again.
    const recorded = 'f'.repeat(64);
    const extracted = [{ path: 'src/a.py', sha256: recorded, bytes: 2 }];
    const tick = () => new Promise((r) => setTimeout(r, 20)); // past the filesystem clock's granularity

    it.each([
      { name: 'is untouched', act: () => {}, rehashed: false },
      {
        name: 'is rewritten with the same size and its mtime put back',
        act: () => {
          const { atime, mtime } = lstatSync(join(ws, 'src/a.py'));
          writeFileSync(join(ws, 'src/a.py'), 'Z\n');
          utimesSync(join(ws, 'src/a.py'), atime, mtime);
        },
        rehashed: true,
      },
      {
        name: 'only has its mode changed',
        act: () => chmodSync(join(ws, 'src/a.py'), 0o600),
        rehashed: true,
      },
      {
        name: 'is replaced by another file of the same size',
        act: () => {
          unlinkSync(join(ws, 'src/a.py'));
          writeFileSync(join(ws, 'src/a.py'), 'a\n');
        },
        rehashed: true,
      },
    ])('trusts the extraction digest only when the file $name', async ({ act, rehashed }) => {
      await tick();
      const known = knownFiles(ws, extracted, join(ws, '..', `${ws.split('/').pop()}.fence`));
      await tick();
      act();
      const got = await diffWorkspace(ws, job, known);
      rmSync(`${ws}.fence`, { force: true });
      expect(got.ok).toBe(true);
      const out = got.ok ? got.outputs : [];
      if (!rehashed) expect(out).toEqual([{ path: 'src/a.py', sha256: recorded, bytes: 2 }]);
      else expect(out.find((o) => o.sha256 === recorded)).toBeUndefined();
    });

    it('hashes a file changed within the same clock tick as the extraction (the fence is not older)', async () => {
      const fence = `${ws}.fence`;
      const known = knownFiles(ws, extracted, fence);
      rmSync(fence);
      // a fence whose ctime is not after the file's: as if extraction and fence shared one tick
      const racy = { ...known, fenceCtimeNs: known.files.get('src/a.py')!.ctimeNs };
      const got = await diffWorkspace(ws, job, racy);
      expect(got).toEqual({ ok: true, outputs: [] }); // hashed: the real bytes match the job
    });
  });
});

describe('diffWorkspace with files read for context (--read)', () => {
  const withRead = buildJob('x', [{ path: 'src/a.py', sha256: sha256Hex('a\n') }], undefined, [
    { path: 'lib/types.py', sha256: sha256Hex('T = 1\n') },
  ]);
  beforeEach(() => {
    mkdirSync(join(ws, 'lib'));
    writeFileSync(join(ws, 'lib/types.py'), 'T = 1\n');
  });

  it('lets a read file stand unchanged beside the outputs, and never makes it one', async () => {
    writeFileSync(join(ws, 'src/a.py'), 'A\n');
    expect(await diffWorkspace(ws, withRead)).toEqual({
      ok: true,
      outputs: [{ path: 'src/a.py', sha256: sha256Hex('A\n'), bytes: 2 }],
    });
  });

  it('rejects a generator that changed a read file (tamper: the context is never an output)', async () => {
    writeFileSync(join(ws, 'lib/types.py'), 'T = 2\n');
    expect(await diffWorkspace(ws, withRead)).toEqual({
      ok: false,
      reason: 'changed "lib/types.py", which the job ships read-only (--read): it is never an output',
    });
  });

  it('rejects a generator that deleted a read file', async () => {
    unlinkSync(join(ws, 'lib/types.py'));
    expect(await diffWorkspace(ws, withRead)).toEqual({
      ok: false,
      reason: 'deleted "lib/types.py", which the job ships read-only (--read)',
    });
  });
});
