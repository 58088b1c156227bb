import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyJob, recoverInterruptedApplies } from '../../src/apply/apply-job.js';
import { applyLockFile } from '../../src/apply/apply-lock.js';
import { readApplied } from '../../src/apply/apply-records.js';
import { TREE_TMP_PREFIX } from '../../src/apply/tree-file.js';
import { ConflictError, RejectedError, type UsageError } from '../../src/core/errors.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { type FsPort, nodeFs } from '../../src/store/fs-port.js';
import { readJournal } from '../../src/store/journal.js';
import { makeFixture, readOrNull, removeTempDirs, snapshot, tempDir } from './fixture.js';

afterEach(removeTempDirs);

const sha = (s: string | Buffer) => sha256Hex(s);

function threeFiles() {
  return makeFixture({
    files: {
      'src/a.ts': { bytes: 'export const a = 1;\n', mode: 0o644 },
      'bin/run.sh': { bytes: '#!/bin/sh\necho old\n', mode: 0o755 },
      'README.md': 'readme\n',
    },
    inputs: ['README.md', 'bin/run.sh', 'src/a.ts', 'src/new/b.ts'],
    outputs: {
      'src/a.ts': 'export const a = 2;\n',
      'bin/run.sh': '#!/bin/sh\necho new\n',
      'src/new/b.ts': 'export const b = 1;\n',
    },
  });
}

/** An apply killed at its first rename in the tree: that call and every later change fail, as a dead process makes none. */
function diesAtRename(): { fs: FsPort; renames: () => number } {
  let n = 0;
  const dead = () => {
    if (n > 0) throw new Error('died');
  };
  const fs: FsPort = {
    ...nodeFs,
    renameSync() {
      n += 1;
      throw new Error('died');
    },
    rmSync(...a) {
      dead();
      nodeFs.rmSync(...a);
    },
    rmdirSync(...a) {
      dead();
      nodeFs.rmdirSync(...a);
    },
    unlinkSync(...a) {
      dead();
      nodeFs.unlinkSync(...a);
    },
  };
  return { fs, renames: () => n };
}

async function expectConflict(p: Promise<unknown>, code: string): Promise<ConflictError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConflictError);
  expect((err as ConflictError).code).toBe(code);
  expect((err as ConflictError).exitCode).toBe(4);
  return err as ConflictError;
}

describe('applyJob', () => {
  it('writes the exact output bytes of a single-file job and keeps the file mode', async () => {
    const f = makeFixture({
      files: { 'tool.sh': { bytes: 'echo 1\n', mode: 0o750 } },
      inputs: ['tool.sh'],
      outputs: { 'tool.sh': 'echo 2\n' },
    });
    const out = await applyJob(f.v, {});
    expect(out).toEqual({
      status: 'applied',
      recovered: false,
      writes: [{ path: 'tool.sh', before: sha('echo 1\n'), after: sha('echo 2\n'), mode: 0o750 }],
    });
    expect(readFileSync(join(f.root, 'tool.sh'), 'utf8')).toBe('echo 2\n');
    expect(statSync(join(f.root, 'tool.sh')).mode & 0o777).toBe(0o750);
  });

  it('writes every file of a multi-file job, creating new files 0644 in new 0755 directories', async () => {
    const f = threeFiles();
    const out = await applyJob(f.v, {});
    expect(out.status).toBe('applied');
    expect(out.writes.map((w) => w.path)).toEqual(['bin/run.sh', 'src/a.ts', 'src/new/b.ts']);
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
    expect(statSync(join(f.root, 'bin/run.sh')).mode & 0o777).toBe(0o755);
    expect(statSync(join(f.root, 'src/new/b.ts')).mode & 0o777).toBe(0o644);
    expect(statSync(join(f.root, 'src/new')).mode & 0o777).toBe(0o755);
  });

  it('records the apply, moves the job out of received/ and keeps before and after bytes in objects/', async () => {
    const f = threeFiles();
    const { store, job } = f.v;
    await applyJob(f.v, {});
    const record = JSON.parse(readFileSync(store.layout.jobFile('applied', job.key), 'utf8'));
    expect(record).toMatchObject({
      schema: 'genjob/applied@1',
      key: job.key,
      job_digest: f.v.jobDigest,
      receipt_sha256: f.v.receiptSha256,
      epoch: 1,
      job,
    });
    expect(record.writes).toHaveLength(3);
    expect(typeof record.applied_at).toBe('string');
    expect(existsSync(store.layout.jobFile('received', job.key))).toBe(false);
    expect(readdirSync(store.layout.dir('applying'))).toEqual([]);
    for (const w of record.writes) {
      expect(sha(readFileSync(store.layout.object(w.after)))).toBe(w.after);
      if (w.before !== null) expect(sha(readFileSync(store.layout.object(w.before)))).toBe(w.before);
    }
    expect(readJournal(store, job.key).map((e) => [e.event, e.writes])).toEqual([['applied', 3]]);
  });

  it('says already-applied on a second apply and writes nothing, even when the repository changed since', async () => {
    const f = threeFiles();
    const first = await applyJob(f.v, {});
    writeFileSync(join(f.root, 'src/a.ts'), 'a user edit\n');
    const before = snapshot(f.root);
    const second = await applyJob(f.v, {});
    expect(second).toEqual({ status: 'already-applied', writes: first.writes });
    expect(snapshot(f.root)).toEqual(before);
  });

  it.each([
    { name: 'an edited input that is also an output', path: 'src/a.ts', edit: 'edit' },
    { name: 'an edited input that is not an output', path: 'README.md', edit: 'edit' },
    { name: 'a deleted input', path: 'bin/run.sh', edit: 'delete' },
    { name: 'a path to create that now exists', path: 'src/new/b.ts', edit: 'create' },
  ] as const)(
    'refuses a stale job ($name) with EGJ_STALE and leaves the repository byte-identical',
    async ({ path, edit }) => {
      const f = threeFiles();
      const abs = join(f.root, path);
      if (edit === 'delete') unlinkSync(abs);
      else {
        mkdirSync(join(abs, '..'), { recursive: true });
        writeFileSync(abs, 'the user wrote this after mint\n');
      }
      const before = snapshot(f.root);
      const err = await expectConflict(applyJob(f.v, {}), 'EGJ_STALE');
      expect(err.message).toContain(path);
      expect(err.message).toContain('the repository changed under the job');
      expect(snapshot(f.root)).toEqual(before);
      if (edit !== 'delete') expect(readFileSync(abs, 'utf8')).toBe('the user wrote this after mint\n');
    },
  );

  it('refuses a job whose directory became a symlink to elsewhere and writes nothing outside', async () => {
    const f = makeFixture({
      files: { 'lib/x.ts': 'x\n' },
      inputs: ['lib/new.ts', 'lib/x.ts'],
      outputs: { 'lib/new.ts': 'new\n', 'lib/x.ts': 'x2\n' },
    });
    const elsewhere = tempDir('genjob-elsewhere-');
    writeFileSync(join(elsewhere, 'x.ts'), 'x\n');
    rmSync(join(f.root, 'lib'), { recursive: true });
    symlinkSync(elsewhere, join(f.root, 'lib'));
    const outside = snapshot(elsewhere);
    const repo = snapshot(f.root);
    const err = await expectConflict(applyJob(f.v, {}), 'EGJ_UNSAFE_PATH');
    expect(err.message).toContain('symlink');
    expect(snapshot(elsewhere)).toEqual(outside);
    expect(snapshot(f.root)).toEqual(repo);
  });

  it('refuses with EGJ_ARTIFACT_DRIFT (exit 3) when the output bytes changed after verify, writing nothing', async () => {
    const f = threeFiles();
    writeFileSync(join(f.v.store.layout.outDir(f.v.job.key), 'src/new/b.ts'), 'tampered\n');
    const before = snapshot(f.root);
    const err = await applyJob(f.v, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RejectedError);
    expect((err as RejectedError).code).toBe('EGJ_ARTIFACT_DRIFT');
    expect((err as RejectedError).exitCode).toBe(3);
    expect(snapshot(f.root)).toEqual(before);
  });

  it.each([
    { name: 'absent', object: null, kept: false },
    { name: 'present with the right bytes', object: 'export const a = 2;\n', kept: true },
    { name: 'present but corrupt', object: 'not the bytes its name says\n', kept: false },
  ] as const)(
    'ends with objects/<after> holding the right bytes when it was $name before the apply',
    async ({ object, kept }) => {
      const f = threeFiles();
      const { store } = f.v;
      const after = sha('export const a = 2;\n');
      const file = store.layout.object(after);
      if (object !== null) writeFileSync(file, object);
      const ino = object === null ? undefined : statSync(file).ino;
      await applyJob(f.v, {});
      expect(readFileSync(file, 'utf8')).toBe('export const a = 2;\n');
      if (ino !== undefined) expect(statSync(file).ino === ino).toBe(kept);
      expect(readdirSync(store.layout.tmp)).toEqual([]);
    },
  );

  it('stores shared bytes once: two outputs alike, and an output equal to the bytes another file replaces', async () => {
    const f = makeFixture({
      files: { 'a.txt': 'one\n', 'b.txt': 'two\n' },
      inputs: ['a.txt', 'b.txt', 'c.txt'],
      // a.txt takes b.txt's old bytes; b.txt and the new c.txt get the same new bytes
      outputs: { 'a.txt': 'two\n', 'b.txt': 'three\n', 'c.txt': 'three\n' },
    });
    const { store } = f.v;
    await applyJob(f.v, {});
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
    expect(readdirSync(store.layout.dir('objects')).sort()).toEqual(
      [sha('one\n'), sha('two\n'), sha('three\n')].sort(),
    );
    expect(readdirSync(store.layout.tmp)).toEqual([]);
  });

  it('writes nothing at all on a dry run and returns the plan', async () => {
    const f = threeFiles();
    const before = snapshot(f.root);
    const out = await applyJob(f.v, { dryRun: true });
    expect(out.status).toBe('dry-run');
    expect(out.writes.map((w) => [w.path, w.mode])).toEqual([
      ['bin/run.sh', 0o755],
      ['src/a.ts', 0o644],
      ['src/new/b.ts', 0o644],
    ]);
    expect(out).not.toHaveProperty('diff');
    expect(snapshot(f.root)).toEqual(before);
  });

  it('shows a unified diff of every change on a dry run with diff, binary files summarised', async () => {
    const f = makeFixture({
      files: { 'a.txt': 'one\ntwo\n', 'logo.png': Buffer.from([0x89, 0x50, 0, 1]) },
      inputs: ['a.txt', 'logo.png', 'new.txt'],
      outputs: { 'a.txt': 'one\nTWO\n', 'logo.png': Buffer.from([0x89, 0x50, 0, 2]), 'new.txt': 'hello\n' },
    });
    const before = snapshot(f.root);
    const out = await applyJob(f.v, { dryRun: true, diff: true });
    expect(snapshot(f.root)).toEqual(before);
    expect(out.status === 'dry-run' && out.diff).toBe(
      [
        '--- a/a.txt',
        '+++ b/a.txt',
        '@@ -1,2 +1,2 @@',
        ' one',
        '-two',
        '+TWO',
        '--- a/logo.png',
        '+++ b/logo.png',
        'binary file changed: logo.png (4 → 4 bytes)',
        '--- /dev/null',
        '+++ b/new.txt',
        '@@ -0,0 +1,1 @@',
        '+hello',
        '',
      ].join('\n'),
    );
  });

  it('still refuses a stale job on a dry run', async () => {
    const f = threeFiles();
    writeFileSync(join(f.root, 'README.md'), 'edited\n');
    await expectConflict(applyJob(f.v, { dryRun: true }), 'EGJ_STALE');
  });

  it('stops with EGJ_STALE when a user edit races the rename, keeps the edit and the applying record, and finishes once the file is restored', async () => {
    const f = threeFiles();
    const target = join(f.root, 'src/a.ts');
    let raced = false;
    // the user saves src/a.ts at the worst moment: right after our temp file is fsynced
    const racing: FsPort = {
      ...nodeFs,
      fsyncSync(fd: number) {
        nodeFs.fsyncSync(fd);
        const tmp = readdirSync(join(f.root, 'src')).find((n) => n.startsWith(TREE_TMP_PREFIX));
        if (tmp !== undefined && !raced) {
          raced = true;
          writeFileSync(target, 'user edit\n');
        }
      },
    };
    const err = await expectConflict(applyJob(f.withFs(racing), {}), 'EGJ_STALE');
    expect(err.message).toContain('src/a.ts');
    expect(err.message).toContain('applying');
    expect(readFileSync(target, 'utf8')).toBe('user edit\n');
    expect(existsSync(f.v.store.layout.applying(f.v.job.key))).toBe(true);
    expect(readdirSync(join(f.root, 'src')).filter((n) => n.startsWith(TREE_TMP_PREFIX))).toEqual([]);

    await expectConflict(applyJob(f.v, {}), 'EGJ_STALE');
    expect(readFileSync(target, 'utf8')).toBe('user edit\n');

    writeFileSync(target, f.original.get('src/a.ts')!);
    const out = await applyJob(f.v, {});
    expect(out).toMatchObject({ status: 'applied', recovered: true });
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
  });

  it('removes torn temp files next to the targets when it finishes an interrupted apply', async () => {
    const f = threeFiles();
    const { store, job } = f.v;
    // an apply that died after its write-ahead record, leaving half a temp file
    const dies = diesAtRename();
    await expect(applyJob(f.withFs(dies.fs), {})).rejects.toThrow('died');
    expect(dies.renames()).toBe(1);
    writeFileSync(join(f.root, 'bin', `${TREE_TMP_PREFIX}999-1-torn`), '#!/bin/sh\nech');
    expect(await recoverInterruptedApplies(store, { vouch: async () => f.v })).toEqual([job.key]);
    expect(readdirSync(join(f.root, 'bin'))).toEqual(['run.sh']);
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
    expect(await applyJob(f.v, {})).toMatchObject({ status: 'already-applied' });
  });

  it('finishes an interrupted apply only when the key verified now backs its record: its job, its receipt, each write', async () => {
    const f = threeFiles();
    const { store, job } = f.v;
    await expect(applyJob(f.withFs(diesAtRename().fs), {})).rejects.toThrow('died');
    const untouched = snapshot(f.root, ['.gen']);
    const refusedWith = async (vouch: () => Promise<typeof f.v>, why: RegExp) => {
      const err = await recoverInterruptedApplies(store, { vouch }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RejectedError);
      expect(err).toMatchObject({ code: 'EGJ_APPLYING_UNVERIFIED', exitCode: 3 });
      expect((err as Error).message).toMatch(why);
      expect((err as Error).message).toContain(store.layout.applying(job.key));
      expect(snapshot(f.root, ['.gen'])).toEqual(untouched);
    };
    await refusedWith(
      async () => ({ ...f.v, jobDigest: 'd'.repeat(64) }),
      /of job digest .*, the job's is dddddddddddd/,
    );
    await refusedWith(
      async () => ({ ...f.v, receiptSha256: 'e'.repeat(64) }),
      /the receipt's digest is eeeeeeeeeeee/,
    );
    const other = f.v.outputs.map((o) => (o.path === 'src/a.ts' ? { ...o, sha256: 'f'.repeat(64) } : o));
    await refusedWith(async () => ({ ...f.v, outputs: other }), /its write of "src\/a\.ts" is not an output/);
    await refusedWith(
      async () => ({ ...f.v, outputs: f.v.outputs.filter((o) => o.path !== 'src/new/b.ts') }),
      /its write of "src\/new\/b\.ts" is not an output/,
    );
    // a verification that fails is said in the refusal, and nothing more runs
    await refusedWith(async () => {
      throw new RejectedError('EGJ_RECEIPT_MISSING', 'no receipt for this job');
    }, /\(no receipt for this job\)/);
    // anything else the verification throws is not taken for a refusal
    await expect(
      recoverInterruptedApplies(store, {
        vouch: async () => {
          throw new TypeError('a bug');
        },
      }),
    ).rejects.toThrow(TypeError);
    // applyJob meeting the pending record checks the same
    await expect(applyJob({ ...f.v, receiptSha256: 'e'.repeat(64) }, {})).rejects.toMatchObject({
      code: 'EGJ_APPLYING_UNVERIFIED',
    });
    expect(snapshot(f.root, ['.gen'])).toEqual(untouched);
    expect(await recoverInterruptedApplies(store, { vouch: async () => f.v })).toEqual([job.key]);
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
  });

  it('gives the write to exactly one of two applies racing in one process', async () => {
    for (const lockTimeoutMs of [0, 10_000]) {
      const f = threeFiles();
      const results = await Promise.allSettled([
        applyJob(f.v, { lockTimeoutMs }),
        applyJob(f.v, { lockTimeoutMs }),
      ]);
      const statuses = results.map((r) =>
        r.status === 'fulfilled' ? r.value.status : (r.reason as ConflictError).code,
      );
      expect(statuses.filter((s) => s === 'applied')).toHaveLength(1);
      expect(statuses.filter((s) => s !== 'applied')[0]).toMatch(/^(already-applied|EGJ_LOCKED)$/);
      if (lockTimeoutMs > 0) expect(statuses.sort()).toEqual(['already-applied', 'applied']);
      for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
    }
  });

  it('keeps a file mode it finds at apply time rather than the default', async () => {
    const f = threeFiles();
    chmodSync(join(f.root, 'src/a.ts'), 0o600);
    const out = await applyJob(f.v, {});
    expect(out.writes.find((w) => w.path === 'src/a.ts')?.mode).toBe(0o600);
    expect(statSync(join(f.root, 'src/a.ts')).mode & 0o777).toBe(0o600);
  });

  it('applies nothing of a job dropped (or retried) after it was verified: EGJ_NOT_RECEIVED, no applying/ record', async () => {
    const f = threeFiles();
    const { store, job } = f.v;
    const before = snapshot(f.root, ['.gen']);
    renameSync(store.layout.jobFile('received', job.key), join(store.layout.dir('dead'), `${job.key}.job.1`));
    const err = await applyJob(f.v, {}).then(
      () => undefined,
      (e: unknown) => e as UsageError,
    );
    expect(err).toMatchObject({ code: 'EGJ_NOT_RECEIVED', exitCode: 2 });
    expect(err?.message).toMatch(
      /the job is gone \(dropped or superseded\) since it was verified; nothing was applied/,
    );
    expect(snapshot(f.root, ['.gen'])).toEqual(before);
    expect(readdirSync(store.layout.dir('applying'))).toEqual([]);
    expect(readdirSync(store.layout.dir('applied'))).toEqual([]);
    // retried meanwhile: back in the queue
    renameSync(join(store.layout.dir('dead'), `${job.key}.job.1`), store.layout.jobFile('queue', job.key));
    await expect(applyJob(f.v, {})).rejects.toMatchObject({
      code: 'EGJ_NOT_RECEIVED',
      message: expect.stringContaining('now in queue/'),
    });
    expect(snapshot(f.root, ['.gen'])).toEqual(before);
  });

  it('recovers nothing, and writes nothing, when no apply was interrupted', async () => {
    const f = threeFiles();
    const before = snapshot(f.root);
    expect(await recoverInterruptedApplies(f.v.store, { vouch: async () => f.v })).toEqual([]);
    expect(snapshot(f.root)).toEqual(before);
  });

  it('shows on a dry run only what an interrupted apply still has to write', async () => {
    const f = threeFiles();
    let renames = 0;
    const dies: FsPort = {
      ...nodeFs,
      renameSync(from, to) {
        renames += 1;
        if (renames > 1) throw new Error('died');
        nodeFs.renameSync(from, to);
      },
    };
    await expect(applyJob(f.withFs(dies), {})).rejects.toThrow('died');
    const before = snapshot(f.root);
    const out = await applyJob(f.v, { dryRun: true, diff: true });
    expect(snapshot(f.root)).toEqual(before);
    expect(out.writes).toHaveLength(3);
    const diff = out.status === 'dry-run' ? (out.diff ?? '') : '';
    // the file created (creates go first) and the first rename were written before it died
    expect(diff).not.toContain('bin/run.sh');
    expect(diff).not.toContain('src/new/b.ts');
    expect(diff).toContain('+++ b/src/a.ts');
  });
});

describe('applyJob on a full disk', () => {
  /** A port whose write of a tree temp (not one in .gen/) fails with ENOSPC from the `nth` on. */
  function fullAtTreeTemp(nth: number): FsPort {
    let n = 0;
    return {
      ...nodeFs,
      openSync: ((path: string, flags: number, mode?: number) => {
        const p = String(path);
        if (p.includes(TREE_TMP_PREFIX) && !p.includes('/.gen/') && ++n >= nth)
          throw Object.assign(new Error('ENOSPC: no space left on device'), {
            code: 'ENOSPC',
            errno: -28,
            syscall: 'open',
            path: p,
          });
        return nodeFs.openSync(path, flags, mode);
      }) as FsPort['openSync'],
    };
  }

  it('writes nothing when the last temp does not fit: the tree as it was, applying/ taken back, the job received, and says so', async () => {
    const f = threeFiles();
    const { store, job } = f.v;
    const tree = snapshot(f.root, ['.gen']);
    const err = await applyJob(f.withFs(fullAtTreeTemp(3)), {}).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/: open failed: no space left on device \(ENOSPC\); nothing was written$/);
    expect(snapshot(f.root, ['.gen'])).toEqual(tree); // no file, no temp, no src/new/
    expect(readdirSync(store.layout.dir('applying'))).toEqual([]);
    expect(existsSync(store.layout.jobFile('received', job.key))).toBe(true);
    expect(readdirSync(store.layout.dir('applied'))).toEqual([]);
    // with room again it is a plain apply, not the end of an interrupted one
    expect(await applyJob(f.v, {})).toMatchObject({ status: 'applied', recovered: false });
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
  });

  it('says the apply is partial, and that genjob apply finishes it, when a commit fails after the first', async () => {
    const f = threeFiles();
    const { store, job } = f.v;
    let renames = 0;
    const failing: FsPort = {
      ...nodeFs,
      renameSync(from, to) {
        if (!String(to).includes('/.gen/') && ++renames === 2)
          throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO', errno: -5, syscall: 'rename' });
        nodeFs.renameSync(from, to);
      },
    };
    const err = await applyJob(f.withFs(failing), {}).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(
      new RegExp(
        `src/a\\.ts: rename failed: i/o error \\(EIO\\); the apply is partial \\(files already written stay written\\): ${store.layout.applying(job.key)} is kept, so \`genjob apply\` finishes it$`,
      ),
    );
    expect(readOrNull(f.root, 'src/new/b.ts')).toEqual(f.expected.get('src/new/b.ts'));
    expect(readOrNull(f.root, 'src/a.ts')).toEqual(f.original.get('src/a.ts'));
    expect(existsSync(store.layout.applying(job.key))).toBe(true);
    expect(await applyJob(f.v, {})).toMatchObject({ status: 'applied', recovered: true });
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
  });
});

describe('the journal line of an apply', () => {
  const appliedLines = (f: ReturnType<typeof threeFiles>) =>
    readJournal(f.v.store, f.v.job.key).filter((e) => e.event === 'applied');

  it('is written by the next apply when the apply stopped between applied/ and its line (killed, or the journal full)', async () => {
    for (const next of ['apply', 'recover'] as const) {
      const f = threeFiles();
      const { store, job } = f.v;
      const full: FsPort = {
        ...nodeFs,
        writeSync: ((fd: number, ...rest: unknown[]) => {
          // a write to this process's journal segment (the fd's path, as Linux shows it)
          if (readlinkSync(`/proc/self/fd/${fd}`).includes('/journal.d/'))
            throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
          return (nodeFs.writeSync as (...a: unknown[]) => number)(fd, ...rest);
        }) as FsPort['writeSync'],
      };
      const err = (await applyJob(f.withFs(full), {}).catch((e: unknown) => e)) as Error;
      expect(err.message).toMatch(
        /: append failed: no space left on device \(ENOSPC\); the job is applied, its journal line not written: the next `genjob apply` writes it$/,
      );
      expect(existsSync(store.layout.jobFile('applied', job.key))).toBe(true);
      expect(existsSync(store.layout.applying(job.key))).toBe(true); // the mark that the line may be missing
      expect(appliedLines(f)).toEqual([]);

      if (next === 'apply') expect(await applyJob(f.v, {})).toMatchObject({ status: 'already-applied' });
      else expect(await recoverInterruptedApplies(store, { vouch: async () => f.v })).toEqual([job.key]);
      const lines = appliedLines(f);
      expect(lines).toMatchObject([{ key: job.key, writes: 3, recovered: true }]);
      expect(lines[0]!.applied_at).toBe(readApplied(store, job.key)!.applied_at);
      expect(readdirSync(store.layout.dir('applying'))).toEqual([]);
      expect(existsSync(store.layout.jobFile('received', job.key))).toBe(false);
      await applyJob(f.v, {});
      expect(appliedLines(f)).toHaveLength(1);
    }
  });

  it('is not written twice when the apply stopped after its line, before applying/ was removed', async () => {
    const f = threeFiles();
    const { store, job } = f.v;
    await applyJob(f.v, {});
    // as a kill right after the journal line leaves it: applying/ back beside applied/
    const { applied_at: _, ...rest } = readApplied(store, job.key)!;
    writeFileSync(store.layout.applying(job.key), JSON.stringify({ ...rest, schema: 'genjob/applying@1' }));
    expect(await applyJob(f.v, {})).toMatchObject({ status: 'already-applied' });
    expect(appliedLines(f)).toHaveLength(1);
    expect(readdirSync(store.layout.dir('applying'))).toEqual([]);
  });
});

describe('applyJob under a lock taken from it', () => {
  // apply's steps are synchronous, so proper-lockfile's refresh timer cannot report a compromise between
  // them: each step looks at the lock directory itself. Here another process takes the lock (as a taker
  // of a lock it judged stale does: the directory set aside, a new one made) while the first tree file
  // is written; the apply stops before the next one, and once the other process is done, apply finishes.
  it('stops before the next tree write, and a later apply finishes the job', async () => {
    const f = threeFiles();
    const lockDir = applyLockFile(f.v.store);
    const theirRecord = '{"host":"elsewhere","pid":1,"start":1,"ino":1}\n';
    let taken = false;
    const takeOver = (to: unknown) => {
      if (!taken && !String(to).includes('/.gen/') && String(to).startsWith(f.root)) {
        taken = true;
        nodeFs.renameSync(lockDir, `${lockDir}.set-aside`);
        mkdirSync(lockDir);
        writeFileSync(`${lockDir}.owner`, theirRecord);
      }
    };
    // the first tree commit: a create (link) or a replace (rename)
    const fs: FsPort = {
      ...nodeFs,
      linkSync(from, to) {
        nodeFs.linkSync(from, to);
        takeOver(to);
      },
      renameSync(from, to) {
        nodeFs.renameSync(from, to);
        takeOver(to);
      },
    };
    const err = await expectConflict(applyJob(f.withFs(fs), {}), 'EGJ_LOCK_LOST');
    expect(err.message).toMatch(/another process took the lock over.*stopped before writing /);
    const changed = [...f.expected].filter(
      ([path, bytes]) => !bytes?.equals(f.original.get(path) ?? Buffer.alloc(0)),
    );
    const written = changed.filter(([path, bytes]) => readOrNull(f.root, path)?.equals(bytes!) === true);
    expect(written).toHaveLength(1); // the file being written when the lock was taken, no other

    // its lock was left to it: releasing ours removed neither the directory in its place nor its record
    expect(existsSync(lockDir)).toBe(true);
    expect(readFileSync(`${lockDir}.owner`, 'utf8')).toBe(theirRecord);
    rmSync(lockDir, { recursive: true }); // the other process is done
    rmSync(`${lockDir}.set-aside`, { recursive: true });
    expect((await applyJob(f.v, {})).status).toBe('applied');
    for (const [path, bytes] of f.expected) expect(readOrNull(f.root, path)).toEqual(bytes);
  });
});
