// What a user sees when a revert cannot (or can only partly) be done: the exact refusal and the state on
// disk after it.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyJob } from '../../src/apply/apply-job.js';
import { revertApplied } from '../../src/apply/revert.js';
import { TREE_TMP_PREFIX } from '../../src/apply/tree-file.js';
import type { GenjobError } from '../../src/core/errors.js';
import { sha256Hex } from '../../src/core/sha256.js';
import {
  TOMBSTONE_SCHEMA,
  type Tombstone,
  tombstoneFile,
  writeTombstone,
} from '../../src/store/tombstone.js';
import { hookedStore } from '../helpers/hooked-fs.js';
import { makeFixture, readOrNull, removeTempDirs, snapshot } from './fixture.js';

afterEach(removeTempDirs);

async function appliedJob() {
  const f = makeFixture({
    files: {
      'src/a.ts': { bytes: 'a = 1\n', mode: 0o600 },
      'bin/run.sh': { bytes: '#!/bin/sh\necho old\n', mode: 0o755 },
    },
    inputs: ['bin/run.sh', 'src/a.ts', 'src/new/b.ts'],
    outputs: { 'src/a.ts': 'a = 2\n', 'bin/run.sh': '#!/bin/sh\necho new\n', 'src/new/b.ts': 'b\n' },
  });
  await applyJob(f.v, {});
  return { f, store: f.v.store, key: f.v.job.key };
}

async function refusal(p: Promise<unknown>): Promise<GenjobError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as GenjobError;
}

function tombstone(key: string, state: 'applied' | 'dropped'): Tombstone {
  return {
    schema: TOMBSTONE_SCHEMA,
    key,
    state,
    finished_at: null,
    job_digest: null,
    receipt_sha256: null,
    pruned: [],
    pruned_at: '2026-11-30T22:15:00.000Z',
  };
}

describe('revertApplied refusals', () => {
  it('refuses a key gc pruned after it was applied with EGJ_PRUNED, naming the tombstone and the day, and writes nothing', async () => {
    const { f, store, key } = await appliedJob();
    writeTombstone(store, tombstone(key, 'applied'));
    const before = snapshot(f.root);
    const err = await refusal(revertApplied(store, key));
    expect([err.code, err.exitCode]).toEqual(['EGJ_PRUNED', 2]);
    expect(err.message).toBe(
      `${tombstoneFile(store, key)}: key ${key.slice(0, 12)} was applied and its material pruned by genjob gc on 2026-11-30 ` +
        '(its backups in objects/ are gone); it cannot be reverted — change the files back by hand or with git',
    );
    expect(snapshot(f.root)).toEqual(before);
  });

  it('reverts a key whose tombstone says it was dropped, not applied', async () => {
    const { f, store, key } = await appliedJob();
    writeTombstone(store, tombstone(key, 'dropped'));
    expect((await revertApplied(store, key)).reverted).toHaveLength(3);
    for (const [path, bytes] of f.original) expect(readOrNull(f.root, path)).toEqual(bytes);
  });

  it('says EGJ_NOT_APPLIED naming the missing apply record when the key was never applied', async () => {
    const f = makeFixture({ files: { 'a.ts': 'a\n' }, inputs: ['a.ts'], outputs: { 'a.ts': 'b\n' } });
    const key = f.v.job.key;
    const err = await refusal(revertApplied(f.v.store, key));
    expect(err.code).toBe('EGJ_NOT_APPLIED');
    expect(err.message).toBe(
      `${f.v.store.layout.jobFile('applied', key)}: key ${key.slice(0, 12)} has no apply record; nothing to revert`,
    );
  });

  it('names the edited file, both digests and that nothing was written when a target changed after the apply', async () => {
    const { f, store, key } = await appliedJob();
    writeFileSync(join(f.root, 'src/a.ts'), 'my edit\n');
    const err = await refusal(revertApplied(store, key));
    expect([err.code, err.exitCode]).toEqual(['EGJ_STALE', 4]);
    expect(err.message).toBe(
      `src/a.ts: the repository changed under the job (expected sha256 ${sha256Hex('a = 2\n').slice(0, 12)}, ` +
        `found sha256 ${sha256Hex('my edit\n').slice(0, 12)}); it changed after the apply and reverting would ` +
        'overwrite that edit; nothing was written',
    );
    expect(readOrNull(f.root, 'bin/run.sh')?.toString()).toBe('#!/bin/sh\necho new\n');
  });

  it('stops at a file edited while the revert runs, keeps the edit and the files already reverted, and keeps the key applied', async () => {
    const { f, store, key } = await appliedJob();
    let edited = false;
    // another process edits src/a.ts right after the revert wrote the temp file that would replace it
    const racing = hookedStore(store, (call, args, proceed) => {
      const out = proceed();
      if (!edited && call === 'openSync' && String(args[0]).includes(`src/${TREE_TMP_PREFIX}`)) {
        edited = true;
        writeFileSync(join(f.root, 'src/a.ts'), 'racing edit\n');
      }
      return out;
    });
    const err = await refusal(revertApplied(racing, key));
    expect(err.code).toBe('EGJ_STALE');
    expect(err.message).toBe(
      `src/a.ts: the repository changed under the job (expected sha256 ${sha256Hex('a = 2\n').slice(0, 12)}, ` +
        `found sha256 ${sha256Hex('racing edit\n').slice(0, 12)}); it changed after the apply and reverting would ` +
        'overwrite that edit; stopped (files already reverted stay reverted)',
    );
    expect(readOrNull(f.root, 'src/a.ts')?.toString()).toBe('racing edit\n');
    expect(readOrNull(f.root, 'bin/run.sh')).toEqual(f.original.get('bin/run.sh'));
    expect(readOrNull(f.root, 'src/new/b.ts')?.toString()).toBe('b\n');
    expect(existsSync(store.layout.jobFile('applied', key))).toBe(true);
    expect(readdirSync(join(f.root, 'src')).filter((n) => n.startsWith(TREE_TMP_PREFIX))).toEqual([]);
  });
});
