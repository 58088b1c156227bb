// gc never removes through a link: .gen/ can be committed, so a clone can hold `.gen/staging ->
// ../../elsewhere`, and gc listed staging/ (readdir follows the link) and removed its old entries
// there. .gen/ itself and every directory gc lists or removes from (each shadow plane's results/ and
// staging/ too) must be real directories; otherwise gc refuses (EGJ_BAD_PATH) and removes nothing.
import { mkdirSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertGcDirs, executeGc, planGc } from '../../src/store/gc.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

const OLD = new Date(Date.now() - 40 * 86_400_000);

/** A directory outside the store, with an old entry of each name gc would prune from the dir it replaces. */
function victim(base: string): string {
  const dir = join(base, 'victim');
  mkdirSync(join(dir, 'projectA'), { recursive: true });
  writeFileSync(join(dir, 'projectA', 'thesis.tex'), 'precious\n');
  writeFileSync(join(dir, 'notes.txt'), 'keep\n');
  writeFileSync(join(dir, `${'a'.repeat(64)}.job.1-abcdef`), '{}');
  for (const p of ['projectA', 'notes.txt', `${'a'.repeat(64)}.job.1-abcdef`])
    utimesSync(join(dir, p), OLD, OLD);
  return dir;
}

const cases: Array<{ name: string; dir: string }> = [
  { name: 'staging/', dir: 'staging' },
  { name: 'tmp/', dir: 'tmp' },
  { name: 'dead/', dir: 'dead' },
  { name: 'objects/', dir: 'objects' },
  { name: 'out/', dir: 'out' },
  { name: 'tombstones/', dir: 'tombstones' },
  { name: 'journal.d/', dir: 'journal.d' },
  { name: 'a shadow plane', dir: 'shadow/p1' },
  { name: "a shadow plane's results/", dir: 'shadow/p1/results' },
  { name: "a shadow plane's staging/", dir: 'shadow/p1/staging' },
  { name: '.gen/ itself', dir: '' },
];

describe('gc through a link', () => {
  it.each(cases)('$name as a link: EGJ_BAD_PATH naming it, nothing removed anywhere', ({ dir }) => {
    const base = tempDir('genjob-gc-links-');
    const repo = join(base, 'repo');
    const store = new Store(repo).ensure();
    mkdirSync(join(store.layout.gen, 'shadow', 'p1', 'results'), { recursive: true });
    mkdirSync(join(store.layout.gen, 'shadow', 'p1', 'staging'), { recursive: true });
    const outside = victim(base);
    const link = join(store.layout.gen, dir);
    const plan = planGc(store, 0); // made before the swap: executeGc checks again itself
    if (dir === '') {
      // the whole store elsewhere: a .gen/ that is a link to a directory laid out like one
      const elsewhere = join(base, 'elsewhere');
      new Store(elsewhere).ensure();
      rmSync(join(elsewhere, '.gen', 'staging'), { recursive: true });
      symlinkSync(outside, join(elsewhere, '.gen', 'staging'));
      rmSync(link, { recursive: true });
      symlinkSync(relative(repo, join(elsewhere, '.gen')), link);
    } else {
      rmSync(link, { recursive: true, force: true });
      symlinkSync(relative(join(link, '..'), outside), link);
    }
    const before = readdirSync(outside).sort();
    expect(thrown(() => assertGcDirs(store))).toMatchObject({
      code: 'EGJ_BAD_PATH',
      message: expect.stringMatching(
        new RegExp(
          `^${link.replace(/[.]/g, '\\.')}: a symbolic link; gc removes only inside \\.gen/'s own directories, never through a link`,
        ),
      ),
    });
    // executeGc refuses too, whatever plan it is handed
    expect(thrown(() => executeGc(store, plan, { settleMs: 0 }))).toMatchObject({
      code: 'EGJ_BAD_PATH',
    });
    expect(readdirSync(outside).sort()).toEqual(before);
    expect(readdirSync(join(outside, 'projectA'))).toEqual(['thesis.tex']);
  });

  it('refuses a file where a directory should be; a missing directory is fine', () => {
    const store = new Store(join(tempDir('genjob-gc-links-'), 'repo')).ensure();
    rmSync(store.layout.tmp, { recursive: true });
    expect(() => assertGcDirs(store)).not.toThrow();
    writeFileSync(store.layout.tmp, '');
    expect(thrown(() => assertGcDirs(store))).toMatchObject({
      code: 'EGJ_BAD_PATH',
      message: expect.stringContaining(`${store.layout.tmp}: not a directory;`),
    });
  });
});
