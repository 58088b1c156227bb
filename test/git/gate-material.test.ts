// The material the merge gate judges a generated commit by: a key's refs under refs/genjob/keys/ (this
// clone's) then refs/genjob-pulled/keys/ (pull's), only for the keys asked; and one ref's material passes
// only when its receipt decodes, is live, matches its job, and names exactly the outputs under out/, each
// with the receipt's digest and size. Judged in memory: no file under .gen/ is read.
import { describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import type { Receipt } from '../../src/core/receipt.js';
import { NO_TRUST } from '../../src/core/receipt-envelope.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { buildMaterial } from '../../src/git/build-material.js';
import { judgeMaterial, loadKeyMaterial } from '../../src/git/gate-material.js';
import type { PulledMaterial } from '../../src/git/read-material.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import { thrown } from '../helpers/thrown.js';
import { tempGitRepo } from './git-repo.js';
import { jobWithReceipt } from './job-fixture.js';

const REF = 'refs/genjob/keys/k';

/** One ref's material for a job writing `outputs`, the receipt edited by `edit`, out/ holding `out`. */
function material(
  outputs: Record<string, string>,
  o: { edit?: (r: Receipt) => Receipt; out?: Record<string, string> } = {},
): PulledMaterial {
  const made = jobWithReceipt('judge me', outputs);
  const receipt = o.edit ? o.edit(made.receipt) : made.receipt;
  return {
    key: made.job.key,
    ref: REF,
    commit: '0'.repeat(40),
    job: jobFileBytes(made.job),
    receipt: canonicalBytes(receipt),
    outputs: Object.entries(o.out ?? outputs).map(([path, text]) => ({ path, bytes: Buffer.from(text) })),
  };
}

describe('judgeMaterial', () => {
  it('passes material whose out/ holds exactly the receipt’s outputs', () => {
    const m = material({ 'a.txt': 'a\n', 'd/b.txt': 'b\n' });
    const judged = judgeMaterial(m, NO_TRUST);
    expect(judged.receiptSha256).toBe(sha256Hex(m.receipt));
    expect(judged.signer).toBeNull();
    expect(judged.job.key).toBe(m.key);
    expect(judged.receipt.outputs.map((o) => o.path)).toEqual(['a.txt', 'd/b.txt']);
  });

  it.each([
    {
      attack: 'tampered output bytes',
      m: () => material({ 'a.txt': 'a\n' }, { out: { 'a.txt': 'evil\n' } }),
      code: 'EGJ_ARTIFACT_DRIFT',
      message: `${REF}:out/a.txt: bytes hash to ${sha256Hex('evil\n').slice(0, 12)}, receipt says ${sha256Hex('a\n').slice(0, 12)}`,
    },
    {
      attack: 'tampered output bytes of the receipt’s size',
      m: () => material({ 'a.txt': 'a\n' }, { out: { 'a.txt': 'z\n' } }),
      code: 'EGJ_ARTIFACT_DRIFT',
      message: `${REF}:out/a.txt: bytes hash to ${sha256Hex('z\n').slice(0, 12)}, receipt says ${sha256Hex('a\n').slice(0, 12)}`,
    },
    {
      attack: 'a forged size beside the right digest',
      m: () =>
        material(
          { 'a.txt': 'a\n' },
          { edit: (r) => ({ ...r, outputs: r.outputs.map((o) => ({ ...o, bytes: o.bytes + 1 })) }) },
        ),
      code: 'EGJ_ARTIFACT_DRIFT',
      message: `${REF}:out/a.txt: bytes hash to ${sha256Hex('a\n').slice(0, 12)}, receipt says ${sha256Hex('a\n').slice(0, 12)}`,
    },
    {
      attack: 'an output the receipt names but out/ lacks',
      m: () => material({ 'a.txt': 'a\n', 'b.txt': 'b\n' }, { out: { 'a.txt': 'a\n' } }),
      code: 'EGJ_ARTIFACT_MISSING',
      message: `${REF}:out/b.txt: the receipt names this output but it is missing`,
    },
    {
      attack: 'a smuggled artifact the receipt does not name',
      m: () => material({ 'a.txt': 'a\n' }, { out: { 'a.txt': 'a\n', 'evil.sh': 'x\n' } }),
      code: 'EGJ_ARTIFACT_EXTRA',
      message: `${REF}:out/evil.sh: artifact the receipt does not name`,
    },
    {
      attack: 'a shadow receipt',
      m: () => material({ 'a.txt': 'a\n' }, { edit: (r) => ({ ...r, plane: 'shadow' }) }),
      code: 'EGJ_SHADOW',
      message: `${REF}:receipt.json: receipt is of plane "shadow"; shadow results are never verified or applied (make one live with genjob promote)`,
    },
  ])('refuses $attack', ({ m, code, message }) => {
    expect(thrown(() => judgeMaterial(m(), NO_TRUST))).toMatchObject({ code, message });
  });

  it('refuses a job file that is not a job, naming it in the ref', () => {
    const m = { ...material({ 'a.txt': 'a\n' }), job: Buffer.from('{"not":"a job"}') };
    const err = thrown(() => judgeMaterial(m, NO_TRUST)) as Error;
    expect(err.message.startsWith(`${REF}:job.json`)).toBe(true);
  });
});

describe('loadKeyMaterial', () => {
  it('reads only the keys asked for: this clone’s ref first, then the one pull fetched', async () => {
    const repo = tempGitRepo('gj-gate-material-');
    const one = jobWithReceipt('one', { 'a.txt': 'a\n' });
    const two = jobWithReceipt('two', { 'b.txt': 'b\n' });
    const materials = [one, two].map(({ job, receipt }) => {
      const bytes = canonicalBytes(receipt);
      return {
        key: job.key,
        job: jobFileBytes(job),
        receipt: bytes,
        receiptSha256: sha256Hex(bytes),
        outputs: receipt.outputs.map((o) => ({
          path: o.path,
          bytes: Buffer.from(o.path === 'a.txt' ? 'a\n' : 'b\n'),
        })),
      };
    });
    await buildMaterial(repo.root, materials);
    // the same key's material as pull would have fetched it, and a ref whose name is no key
    repo.git(['update-ref', `refs/genjob-pulled/keys/${one.job.key}`, `refs/genjob/keys/${one.job.key}`]);
    repo.git(['update-ref', 'refs/genjob/keys/not-a-key', `refs/genjob/keys/${two.job.key}`]);

    const loaded = await loadKeyMaterial(repo.root, new Set([one.job.key]));
    expect([...loaded.keys()]).toEqual([one.job.key]);
    expect(loaded.get(one.job.key)!.map((o) => (o.ok ? o.material.ref : o.ref))).toEqual([
      `refs/genjob/keys/${one.job.key}`,
      `refs/genjob-pulled/keys/${one.job.key}`,
    ]);
    expect((await loadKeyMaterial(repo.root, new Set(['f'.repeat(64)]))).size).toBe(0);
  });
});
