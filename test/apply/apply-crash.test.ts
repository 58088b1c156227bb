// Fault injection: crash a 3-file apply at every one of its mutating filesystem calls, then recover.
import { existsSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { applyJob, recoverInterruptedApplies } from '../../src/apply/apply-job.js';
import { nodeFs } from '../../src/store/fs-port.js';
import { crashingFs, isCrash } from '../helpers/crashing-fs.js';
import { makeFixture, readOrNull, removeTempDirs, snapshot } from './fixture.js';

afterEach(removeTempDirs);

function threeFiles() {
  return makeFixture({
    files: {
      'src/a.ts': { bytes: 'export const a = 1;\n'.repeat(50), mode: 0o644 },
      'bin/run.sh': { bytes: '#!/bin/sh\necho old\n', mode: 0o755 },
    },
    inputs: ['bin/run.sh', 'src/a.ts', 'src/new/b.ts'],
    outputs: {
      'src/a.ts': 'export const a = 2;\n'.repeat(60),
      'bin/run.sh': '#!/bin/sh\necho new\n',
      'src/new/b.ts': 'export const b = 1;\n',
    },
  });
}

describe('applyJob under crashes', () => {
  it('leaves every file whole and is finished by the next run, whichever mutating call the crash hits', async () => {
    const probe = threeFiles();
    const counter = crashingFs(nodeFs, Number.POSITIVE_INFINITY);
    expect((await applyJob(probe.withFs(counter), {})).status).toBe('applied');
    const total = counter.mutations;
    const finalTree = snapshot(probe.root, ['.gen']);
    expect(total).toBeGreaterThan(20);

    for (let n = 1; n <= total; n++) {
      const f = threeFiles();
      const { store, job } = f.v;
      const fs = crashingFs(nodeFs, n);
      const err = await applyJob(f.withFs(fs), {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      const where = `crash #${n} at ${fs.log.at(-1)}`;
      expect(isCrash(err), `${where}: ${String(err)}`).toBe(true);
      for (const [path, after] of f.expected) {
        expect([f.original.get(path), after], `${where}: ${path} is torn`).toContainEqual(
          readOrNull(f.root, path),
        );
      }

      // the next run finishes it: recover on odd crashes, a plain apply on even ones
      if (n % 2 === 1) await recoverInterruptedApplies(store);
      const next = await applyJob(f.v, {});
      expect(['applied', 'already-applied'], where).toContain(next.status);

      expect(snapshot(f.root, ['.gen']), where).toEqual(finalTree);
      expect(readdirSync(store.layout.dir('applied')), where).toEqual([`${job.key}.json`]);
      expect(readdirSync(store.layout.dir('applying')), where).toEqual([]);
      expect(existsSync(store.layout.jobFile('received', job.key)), where).toBe(false);
      expect(await applyJob(f.v, {}), where).toMatchObject({ status: 'already-applied' });
      removeTempDirs();
    }
  });
});
