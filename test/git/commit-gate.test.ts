// The merge gate on a real git repository: a commit carrying Genjob trailers passes only when its material
// (under refs/genjob/, never .gen/) verifies, is the receipt its trailer names, sits on the history the job
// was minted from (its inputs and the files it only read), and changes exactly the receipt's outputs with the receipt's bytes and modes; a person's
// commit, and what a merge adds beyond the automatic merge of its parents, may not touch .gen/, nor (under
// --require-genjob) the protected paths or the trust policy. What a reviewer sees for each failure is
// pinned: the code and the message, per commit, oldest first.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import type { Job } from '../../src/core/job.js';
import type { Receipt } from '../../src/core/receipt.js';
import { NO_TRUST, type ReceiptTrustPolicy, signReceipt } from '../../src/core/receipt-envelope.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { buildMaterial } from '../../src/git/build-material.js';
import { checkCommits, parseRaw } from '../../src/git/commit-gate.js';
import { commitMessage } from '../../src/git/trailers.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import { keyIdOf } from '../../src/trust/keys.js';
import { tagChars } from '../helpers/tag-chars.js';
import { type Repo, tempGitRepo } from './git-repo.js';
import { jobWithReceipt } from './job-fixture.js';

const OLD = 'old\n';
const NEW = 'new\n';

interface Received {
  job: Job;
  receipt: Receipt;
  receiptSha256: string;
}

interface ReceiveOptions {
  sign?: { privateKey: KeyObject; keyid: string };
  /** Outputs the receipt marks executable. */
  executable?: string[];
  /** The commit the job is minted from (its inputs' digests): default HEAD. */
  at?: string;
  /** Files the job only reads (--read), digested as `at` holds them. */
  reads?: string[];
  /** Where the material goes: this clone's refs/genjob/keys (default), pull's refs/genjob-pulled/keys, or nowhere. */
  where?: 'local' | 'pulled' | 'none';
  /** The bytes put under out/ instead of the outputs (a drifted artifact). */
  outBytes?: Record<string, string>;
  /** Receipt fields to change after the outputs are set (another key, a shadow plane). */
  edit?: (r: Receipt) => Receipt;
}

/** A job of `repo` minted at `at`, its ok receipt naming `outputs` (path → bytes) and its material as a git ref. */
async function receive(
  repo: Repo,
  instruction: string,
  outputs: Record<string, string>,
  o: ReceiveOptions = {},
): Promise<Received> {
  const at = o.at ?? 'HEAD';
  const inputs = Object.fromEntries(
    Object.keys(outputs).map((p) => {
      const b = repo.blob(at, p);
      return [p, b === null ? null : sha256Hex(b)];
    }),
  );
  const reads = Object.fromEntries((o.reads ?? []).map((p) => [p, sha256Hex(repo.blob(at, p)!)]));
  const made = jobWithReceipt(instruction, outputs, undefined, { inputs, executable: o.executable, reads });
  const receipt = o.edit ? o.edit(made.receipt) : made.receipt;
  const bytes = o.sign ? signReceipt(receipt, o.sign.privateKey, o.sign.keyid) : canonicalBytes(receipt);
  const key = made.job.key;
  if (o.where !== 'none') {
    await buildMaterial(repo.root, [
      {
        key,
        job: jobFileBytes(made.job),
        receipt: bytes,
        receiptSha256: sha256Hex(bytes),
        outputs: Object.entries(o.outBytes ?? outputs).map(([path, text]) => ({
          path,
          bytes: Buffer.from(text),
        })),
      },
    ]);
    if (o.where === 'pulled') {
      repo.git(['update-ref', `refs/genjob-pulled/keys/${key}`, `refs/genjob/keys/${key}`]);
      repo.git(['update-ref', '-d', `refs/genjob/keys/${key}`]);
    }
  }
  return { job: made.job, receipt, receiptSha256: sha256Hex(bytes) };
}

const trailers = (r: Received, signer: string | null = null) =>
  commitMessage(r.job.instruction, r.job.key, r.receiptSha256, signer);

const gate = (
  repo: Repo,
  range: string,
  over: {
    policy?: ReceiptTrustPolicy;
    stopAtFirst?: boolean;
    requireGenjob?: string[];
    policyFiles?: string[];
  } = {},
) => checkCommits(repo.root, { range, policy: NO_TRUST, stopAtFirst: false, ...over });

let repo: Repo;
let base: string;
let gen: Received;
/** Each checkCommits test starts from a repository with a base commit and one received job minted there. */
function withRepo(): void {
  beforeEach(async () => {
    repo = tempGitRepo('gj-gate-');
    base = repo.commit('base', { '.gitignore': '.gen/\n', 'src/a.py': OLD, README: 'people\n' });
    gen = await receive(repo, 'Rewrite a.py', { 'src/a.py': NEW });
  });
}

/** Stage a file under .gen/ (ignored there, so forced), as a branch that ships genjob state would. */
function shipGen(path: string): void {
  mkdirSync(join(repo.root, path, '..'), { recursive: true });
  writeFileSync(join(repo.root, path), '{}\n');
  repo.git(['add', '-f', path]);
}

/** The range of exactly `commit` (a merge without the branches it merged). */
const only = (commit: string) => `${commit} --not ${commit}^@`;

/** A branch `side` off HEAD with one commit of `files`; back on main afterwards. */
function sideBranch(name: string, files: Record<string, string | null>): void {
  repo.git(['checkout', '-q', '-b', name]);
  repo.commit(name, files);
  repo.git(['checkout', '-q', 'main']);
}

describe('checkCommits passes', () => {
  withRepo();
  it('a generated commit that changes exactly its outputs to the receipt bytes, and skips people’s commits', async () => {
    const person = repo.commit('people edit', { README: 'people 2\n' });
    const c = repo.commit(trailers(gen), { 'src/a.py': NEW });
    expect(person).not.toBe(c);
    expect(await gate(repo, `${base}..HEAD`)).toEqual([
      { commit: c, key: gen.job.key, ok: true, outputs: 1, receipt: gen.receiptSha256, signer: null },
    ]);
  });

  it('a generated commit whose outputs add hidden characters, counted and their tag run spelled (a warning: it passes)', async () => {
    // a bidi override, a zero-width space and tag characters spelling "OK", beyond what the parent held
    const hostile = `new\u202e\u200b${tagChars('OK')}\n`;
    const h = await receive(repo, 'Rewrite a.py, hiding', { 'src/a.py': hostile });
    const c = repo.commit(trailers(h), { 'src/a.py': hostile });
    expect(await gate(repo, `${base}..HEAD`)).toEqual([
      {
        commit: c,
        key: h.job.key,
        ok: true,
        outputs: 1,
        receipt: h.receiptSha256,
        signer: null,
        hidden_added: 4,
        hidden_tags: ['OK'],
      },
    ]);
  });

  it('a generated commit of a job with a read file, on a parent holding it as minted', async () => {
    repo.commit('types', { 'src/types.py': 'Number = int\n' });
    const typed = await receive(repo, 'Type a.py', { 'src/a.py': NEW }, { reads: ['src/types.py'] });
    const c = repo.commit(trailers(typed), { 'src/a.py': NEW });
    expect((await gate(repo, `${base}..HEAD`))[0]).toMatchObject({ commit: c, ok: true });
  });

  it('a generated root commit (no parent: every input is a file to create)', async () => {
    const fresh = tempGitRepo('gj-gate-root-');
    const r = await receive(fresh, 'Make b', { 'b.txt': 'b\n' }, { at: 'nothing' });
    const c = fresh.commit(trailers(r), { 'b.txt': 'b\n' });
    expect(await gate(fresh, 'HEAD')).toEqual([
      { commit: c, key: r.job.key, ok: true, outputs: 1, receipt: r.receiptSha256, signer: null },
    ]);
  });

  it('an output its receipt makes executable, committed with mode 100755', async () => {
    const x = await receive(repo, 'Make a script', { 'run.sh': 'echo\n' }, { executable: ['run.sh'] });
    const c = repo.commit(trailers(x), { 'run.sh': 'echo\n' }, { mode: '+x' });
    expect((await gate(repo, `${base}..HEAD`))[0]).toMatchObject({ commit: c, ok: true });
  });

  it('an executable file its receipt rewrites, left executable (the mode it had)', async () => {
    repo.git(['update-index', '--chmod=+x', 'src/a.py']);
    repo.commit('chmod', {});
    const r = await receive(repo, 'Rewrite the script', { 'src/a.py': NEW });
    const c = repo.commit(trailers(r), { 'src/a.py': NEW }, { mode: '+x' });
    expect((await gate(repo, `${base}..HEAD`))[0]).toMatchObject({ commit: c, ok: true });
  });

  it('an output the commit leaves as it was, when its bytes are the receipt’s', async () => {
    repo.commit('people add c', { 'src/c.py': 'c\n' });
    const from = repo.git(['rev-parse', 'HEAD']);
    const both = await receive(repo, 'Touch two', { 'src/a.py': NEW, 'src/c.py': 'c\n' });
    const c = repo.commit(trailers(both), { 'src/a.py': NEW });
    expect(await gate(repo, `${from}..HEAD`)).toEqual([
      { commit: c, key: both.job.key, ok: true, outputs: 2, receipt: both.receiptSha256, signer: null },
    ]);
  });

  it('a signed receipt, naming the pinned key that verified it', async () => {
    const host = generateKeyPairSync('ed25519');
    const signed = await receive(
      repo,
      'Signed',
      { 'src/s.py': 's\n' },
      { sign: { privateKey: host.privateKey, keyid: keyIdOf(host.publicKey) } },
    );
    const c = repo.commit(trailers(signed, 'ci-host'), { 'src/s.py': 's\n' });
    const policy = { trusted: [{ name: 'ci-host', publicKey: host.publicKey }], requireSignature: false };
    expect(await gate(repo, `${base}..HEAD`, { policy })).toEqual([
      {
        commit: c,
        key: signed.job.key,
        ok: true,
        outputs: 1,
        receipt: signed.receiptSha256,
        signer: 'ci-host',
      },
    ]);
  });

  it('material fetched by pull (refs/genjob-pulled/keys/), when this clone built none', async () => {
    const pulled = await receive(repo, 'From a teammate', { 'src/t.py': 't\n' }, { where: 'pulled' });
    const c = repo.commit(trailers(pulled), { 'src/t.py': 't\n' });
    expect(await gate(repo, `${base}..HEAD`)).toEqual([
      { commit: c, key: pulled.job.key, ok: true, outputs: 1, receipt: pulled.receiptSha256, signer: null },
    ]);
  });

  it('of two material refs for one key, the one whose receipt the trailer names', async () => {
    // the remote's receipt (pulled) and this clone's own, another worker's run of the same job
    const theirs = await receive(repo, 'Twice', { 'src/t.py': 't\n' }, { where: 'pulled' });
    const mine = await receive(
      repo,
      'Twice',
      { 'src/t.py': 't\n' },
      { edit: (r) => ({ ...r, worker: { id: 'w', host: 'mine' } }) },
    );
    expect(mine.job.key).toBe(theirs.job.key);
    expect(mine.receiptSha256).not.toBe(theirs.receiptSha256);
    const c = repo.commit(trailers(theirs), { 'src/t.py': 't\n' });
    expect((await gate(repo, `${base}..HEAD`))[0]).toMatchObject({ commit: c, ok: true });
    repo.git(['reset', '-q', '--hard', base]);
    const d = repo.commit(trailers(mine), { 'src/t.py': 't\n' });
    expect((await gate(repo, `${base}..HEAD`))[0]).toMatchObject({ commit: d, ok: true });
  });

  it('a clean merge, under --require-genjob (what the automatic merge makes is no one’s change)', async () => {
    sideBranch('side', { 'src/side.py': 's\n' });
    const c = repo.commit(trailers(gen), { 'src/a.py': NEW });
    repo.git(['merge', '-q', '--no-ff', '-m', 'merge side', 'side']);
    // the side branch's own commit touches src/ too: it is in the range, and a person's
    expect(await gate(repo, `${base}..HEAD`, { requireGenjob: ['src/'] })).toEqual([
      expect.objectContaining({ key: null, ok: false, code: 'EGJ_COMMIT_NOT_GENERATED' }),
      { commit: c, key: gen.job.key, ok: true, outputs: 1, receipt: gen.receiptSha256, signer: null },
    ]);
    expect(await gate(repo, 'side..HEAD', { requireGenjob: ['src/'] })).toEqual([
      { commit: c, key: gen.job.key, ok: true, outputs: 1, receipt: gen.receiptSha256, signer: null },
    ]);
  });

  it('a clean octopus merge of three branches', async () => {
    sideBranch('one', { 'one.txt': '1\n' });
    sideBranch('two', { 'two.txt': '2\n' });
    sideBranch('three', { 'three.txt': '3\n' });
    repo.git(['merge', '-q', '--no-ff', '-m', 'octopus', 'one', 'two', 'three']);
    expect(repo.git(['rev-list', '--parents', '-1', 'HEAD']).split(' ')).toHaveLength(5);
    expect(await gate(repo, 'one..HEAD', { requireGenjob: ['.'] })).toEqual([
      expect.objectContaining({ code: 'EGJ_COMMIT_NOT_GENERATED' }),
      expect.objectContaining({ code: 'EGJ_COMMIT_NOT_GENERATED' }),
    ]);
    expect(await gate(repo, only('HEAD'), { requireGenjob: ['.'] })).toEqual([]);
  });

  it('a generated commit that changes the trust policy, under --require-genjob, reported as such', async () => {
    const t = await receive(repo, 'Trust a new host', {
      'genjob-trust.json': '{"schema":"genjob/trust@1","keys":[]}\n',
    });
    const c = repo.commit(trailers(t), { 'genjob-trust.json': '{"schema":"genjob/trust@1","keys":[]}\n' });
    expect(await gate(repo, `${base}..HEAD`, { requireGenjob: ['src/'] })).toEqual([
      {
        commit: c,
        key: t.job.key,
        ok: true,
        outputs: 1,
        receipt: t.receiptSha256,
        signer: null,
        changes_policy: true,
      },
    ]);
  });

  it('a person’s commit that changes the trust policy, without --require-genjob: reported, not refused', async () => {
    const c = repo.commit('trust my laptop', { 'genjob-trust.json': '{}\n' });
    expect(await gate(repo, `${base}..HEAD`)).toEqual([
      { commit: c, key: null, ok: true, changes_policy: true },
    ]);
  });
});

describe('checkCommits refuses', () => {
  withRepo();
  /** The one check of the range `base..HEAD`, as code and message. */
  async function failure(range = `${base}..HEAD`, over = {}) {
    const checks = await gate(repo, range, over);
    expect(checks).toHaveLength(1);
    expect(checks[0]!.ok).toBe(false);
    return { key: checks[0]!.key, code: checks[0]!.code, message: checks[0]!.message };
  }
  const k12 = () => gen.job.key.slice(0, 12);

  it('a people’s commit touching a path given to --require-genjob', async () => {
    repo.commit('hand edit', { 'src/a.py': 'by hand\n' });
    repo.commit('other hand edit', { README: 'x\n' });
    expect(await failure(`${base}..HEAD`, { requireGenjob: ['src/'] })).toEqual({
      key: null,
      code: 'EGJ_COMMIT_NOT_GENERATED',
      message: 'touches a path given to --require-genjob but has no Genjob-Key trailer',
    });
  });

  it('an evil merge: a clean merge whose tree also edits a protected path', async () => {
    sideBranch('side', { 'side.txt': 's\n' });
    repo.git(['merge', '-q', '--no-ff', '--no-commit', 'side']);
    writeFileSync(join(repo.root, 'src/a.py'), 'slipped into the merge\n');
    repo.git(['add', 'src/a.py']);
    repo.git(['commit', '-qm', 'merge side']);
    const merge = repo.git(['rev-parse', 'HEAD']);
    expect(await gate(repo, 'side..HEAD', { requireGenjob: ['src/'] })).toEqual([
      {
        commit: merge,
        key: null,
        ok: false,
        code: 'EGJ_COMMIT_NOT_GENERATED',
        message: 'beyond the automatic merge of its parents, it touches a path given to --require-genjob',
      },
    ]);
    // the same merge outside the protected paths passes
    expect(await gate(repo, 'side..HEAD', { requireGenjob: ['README'] })).toEqual([]);
  });

  it('a conflict resolved by hand in a protected path', async () => {
    sideBranch('side', { 'src/a.py': 'theirs\n' });
    repo.commit('ours', { 'src/a.py': 'ours\n' });
    expect(() => repo.git(['merge', '-q', 'side'])).toThrow(); // the conflict stops the merge
    writeFileSync(join(repo.root, 'src/a.py'), 'resolved by hand\n');
    repo.git(['add', 'src/a.py']);
    repo.git(['commit', '-q', '--no-edit']);
    expect(await gate(repo, only('HEAD'), { requireGenjob: ['src/'] })).toEqual([
      expect.objectContaining({ key: null, code: 'EGJ_COMMIT_NOT_GENERATED' }),
    ]);
    // the same conflict resolved outside the protected paths passes
    expect(await gate(repo, only('HEAD'), { requireGenjob: ['README'] })).toEqual([]);
  });

  it('an evil octopus merge', async () => {
    sideBranch('one', { 'one.txt': '1\n' });
    sideBranch('two', { 'two.txt': '2\n' });
    repo.git(['merge', '-q', '--no-ff', '--no-commit', 'one', 'two']);
    writeFileSync(join(repo.root, 'src/a.py'), 'slipped into the octopus\n');
    repo.git(['add', 'src/a.py']);
    repo.git(['commit', '-qm', 'octopus']);
    const merge = repo.git(['rev-parse', 'HEAD']);
    expect(await gate(repo, only(merge), { requireGenjob: ['src/'] })).toEqual([
      expect.objectContaining({ commit: merge, code: 'EGJ_COMMIT_NOT_GENERATED' }),
    ]);
  });

  it('a commit that adds anything under .gen/, generated or not, with or without --require-genjob', async () => {
    shipGen('.gen/receipts/x.json');
    repo.commit('ship state', {});
    expect(await failure()).toEqual({
      key: null,
      code: 'EGJ_COMMIT_GEN_DIR',
      message:
        "changes files under .gen/; genjob's state never travels in commits (the gate reads material from refs/genjob/ only)",
    });
    repo.git(['reset', '-q', '--hard', base]);
    shipGen('.gen/applied/x.json');
    repo.commit(trailers(gen), { 'src/a.py': NEW });
    expect((await failure()).code).toBe('EGJ_COMMIT_GEN_DIR');
  });

  it('a merge that brings .gen/ files beyond the automatic merge', async () => {
    sideBranch('side', { 'side.txt': 's\n' });
    repo.git(['merge', '-q', '--no-ff', '--no-commit', 'side']);
    shipGen('.gen/out/x');
    repo.git(['commit', '-qm', 'merge side']);
    expect((await failure('side..HEAD')).message).toMatch(
      /^beyond the automatic merge of its parents, it changes files under \.gen\//,
    );
  });

  it('a person’s commit that changes the trust policy, under --require-genjob', async () => {
    repo.commit('re-pin ci-host', { 'genjob-trust.json': '{}\n' });
    expect(await failure(`${base}..HEAD`, { requireGenjob: ['src/'] })).toEqual({
      key: null,
      code: 'EGJ_COMMIT_POLICY_CHANGE',
      message:
        "changes genjob-trust.json but has no Genjob-Key trailer; under --require-genjob a policy change passes only as a generated commit verified under the policy of the range's base",
    });
  });

  it('a person’s commit that changes another policy file the gate reads (the checkers), under --require-genjob', async () => {
    repo.commit('tests: true', { 'genjob.config.json': '{"checkers":{"tests":{"run":"true"}}}\n' });
    const policyFiles = ['genjob-trust.json', 'genjob.config.json'];
    expect(await failure(`${base}..HEAD`, { requireGenjob: ['src/'], policyFiles })).toEqual({
      key: null,
      code: 'EGJ_COMMIT_POLICY_CHANGE',
      message:
        "changes genjob-trust.json or genjob.config.json but has no Genjob-Key trailer; under --require-genjob a policy change passes only as a generated commit verified under the policy of the range's base",
    });
    // a gate that reads no checkers has no policy in that file
    expect(await gate(repo, `${base}..HEAD`, { requireGenjob: ['src/'] })).toEqual([]);
  });

  it('a merge that changes the trust policy beyond the automatic merge, under --require-genjob', async () => {
    sideBranch('side', { 'side.txt': 's\n' });
    repo.git(['merge', '-q', '--no-ff', '--no-commit', 'side']);
    writeFileSync(join(repo.root, 'genjob-trust.json'), '{}\n');
    repo.git(['add', 'genjob-trust.json']);
    repo.git(['commit', '-qm', 'merge side']);
    expect((await failure('side..HEAD', { requireGenjob: ['src/'] })).code).toBe('EGJ_COMMIT_POLICY_CHANGE');
    expect(await gate(repo, 'side..HEAD')).toEqual([
      expect.objectContaining({ ok: true, changes_policy: true }),
    ]);
  });

  it.each([
    ['two keys', (m: string) => m.replace(/^(Genjob-Key: .*)$/m, '$1\n$1')],
    ['no receipt trailer', (m: string) => m.replace(/^Genjob-Receipt: .*\n/m, '')],
    ['two receipt trailers', (m: string) => m.replace(/^(Genjob-Receipt: .*)$/m, '$1\n$1')],
    ['two signers', (m: string) => `${m}Genjob-Signer: a\nGenjob-Signer: b\n`],
  ])('a commit with %s', async (_what, edit) => {
    repo.commit(edit(trailers(gen)), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_TRAILER',
      message: 'needs exactly one Genjob-Key and one Genjob-Receipt trailer (and at most one Genjob-Signer)',
    });
  });

  it('a Genjob-Key that is not a key', async () => {
    repo.commit(trailers(gen).replace(gen.job.key, gen.job.key.toUpperCase()), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key: gen.job.key.toUpperCase(),
      code: 'EGJ_COMMIT_TRAILER',
      message: `Genjob-Key "${gen.job.key.toUpperCase()}" is not a key`,
    });
  });

  it.each(['0', 'x'])('a Genjob-Key with more than the key (%s before or after it)', async (more) => {
    for (const value of [`${gen.job.key}${more}`, `${more}${gen.job.key}`]) {
      repo.git(['reset', '-q', '--hard', base]);
      repo.commit(trailers(gen).replace(gen.job.key, value), { 'src/a.py': NEW });
      expect((await failure()).message).toBe(`Genjob-Key "${value}" is not a key`);
    }
  });

  it.each([`sha1:${'a'.repeat(64)}`, 'sha256:abc', `sha256:${'a'.repeat(64)}0`, `xsha256:${'a'.repeat(64)}`])(
    'a Genjob-Receipt %s',
    async (value) => {
      repo.commit(trailers(gen).replace(`sha256:${gen.receiptSha256}`, value), { 'src/a.py': NEW });
      expect(await failure()).toEqual({
        key: gen.job.key,
        code: 'EGJ_COMMIT_TRAILER',
        message: `Genjob-Receipt "${value}" is not sha256:<64 hex>`,
      });
    },
  );

  it('a key with no material under refs/genjob/, even with every file of it in .gen/', async () => {
    const only = await receive(repo, 'Only on disk', { 'src/d.py': 'd\n' }, { where: 'none' });
    // what a branch that commits .gen/ would leave in a checkout: the gate never looks there
    const store = repo.store;
    writeFileSync(store.layout.jobFile('received', only.job.key), jobFileBytes(only.job));
    writeFileSync(store.layout.receipt(only.job.key), canonicalBytes(only.receipt));
    mkdirSync(join(store.layout.outDir(only.job.key), 'src'), { recursive: true });
    writeFileSync(join(store.layout.outDir(only.job.key), 'src/d.py'), 'd\n');
    repo.commit(trailers(only), { 'src/d.py': 'd\n' });
    expect(await failure()).toEqual({
      key: only.job.key,
      code: 'EGJ_COMMIT_RECEIPT_MISSING',
      message: `no receipt for job ${only.job.key.slice(0, 12)} here (run genjob pull first; a ref of it that pull skipped is named in pull's warnings)`,
    });
    const unknown = 'f'.repeat(64);
    repo.commit(trailers(gen).replace(gen.job.key, unknown), { 'src/a.py': 'x\n' });
    const checks = await gate(repo, `${base}..HEAD`);
    expect(checks[1]).toMatchObject({
      key: unknown,
      code: 'EGJ_COMMIT_RECEIPT_MISSING',
      message: `no receipt for job ${'f'.repeat(12)} here (run genjob pull first; a ref of it that pull skipped is named in pull's warnings)`,
    });
  });

  it('a key whose only material ref cannot be used, naming the ref and the rule', async () => {
    const blob = repo.object('blob', 'x');
    const key = 'e'.repeat(64);
    repo.git(['update-ref', `refs/genjob-pulled/keys/${key}`, blob]);
    repo.commit(trailers(gen).replace(gen.job.key, key), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key,
      code: 'EGJ_COMMIT_MATERIAL_INVALID',
      message: `refs/genjob-pulled/keys/${key}: points at a blob, not a commit`,
    });
  });

  it('a usable ref beside one that cannot be used', async () => {
    const key = gen.job.key;
    repo.git(['update-ref', `refs/genjob-pulled/keys/${key}`, repo.object('blob', 'x')]);
    repo.commit(trailers(gen), { 'src/a.py': NEW });
    expect((await gate(repo, `${base}..HEAD`))[0]).toMatchObject({ ok: true });
  });

  it.each([
    {
      what: 'an artifact whose bytes drifted',
      o: { outBytes: { 'src/a2.py': 'drift\n' } },
      code: 'EGJ_ARTIFACT_DRIFT',
      rule: /: bytes hash to [0-9a-f]{12}, receipt says [0-9a-f]{12}$/,
    },
    {
      what: 'an artifact missing',
      o: { outBytes: {} },
      code: 'EGJ_ARTIFACT_MISSING',
      rule: /:out\/src\/a2\.py: the receipt names this output but it is missing$/,
    },
    {
      what: 'an artifact the receipt does not name',
      o: { outBytes: { 'src/a2.py': 'two\n', 'src/extra.py': 'e\n' } },
      code: 'EGJ_ARTIFACT_EXTRA',
      rule: /:out\/src\/extra\.py: artifact the receipt does not name$/,
    },
    {
      what: 'a receipt for another key',
      o: { edit: (r: Receipt) => ({ ...r, key: 'a'.repeat(64) }) },
      code: 'EGJ_KEY_MISMATCH',
      rule: /receipt is for key aaaaaaaaaaaa/,
    },
    {
      what: 'a shadow plane’s receipt',
      o: { edit: (r: Receipt) => ({ ...r, plane: 'shadow:try' }) },
      code: 'EGJ_SHADOW',
      rule: /shadow/,
    },
    {
      what: 'a receipt whose status is not ok',
      o: { edit: (r: Receipt) => ({ ...r, status: 'aborted' as const, reason: 'boom' }) },
      code: 'EGJ_STATUS_NOT_OK',
      rule: /status is aborted: boom$/,
    },
  ])('material that breaks a verify rule: $what', async ({ o, code, rule }) => {
    const r = await receive(repo, 'Rule', { 'src/a2.py': 'two\n' }, o as ReceiveOptions);
    repo.commit(trailers(r), { 'src/a2.py': 'two\n' });
    const f = await failure();
    expect(f.code).toBe(code);
    expect(f.message).toMatch(
      new RegExp(`^receipt of job ${r.job.key.slice(0, 12)}: refs/genjob/keys/${r.job.key}:`),
    );
    expect(f.message).toMatch(rule);
  });

  it('an unsigned receipt while a key is pinned', async () => {
    const host = generateKeyPairSync('ed25519');
    repo.commit(trailers(gen), { 'src/a.py': NEW });
    const policy = { trusted: [{ name: 'ci-host', publicKey: host.publicKey }], requireSignature: false };
    expect((await failure(`${base}..HEAD`, { policy })).code).toBe('EGJ_SIGNATURE_MISSING');
  });

  it('a Genjob-Receipt naming another receipt than the one here', async () => {
    const other = 'c'.repeat(64);
    repo.commit(trailers(gen).replace(gen.receiptSha256, other), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_RECEIPT_MISMATCH',
      message: `Genjob-Receipt names sha256:${'c'.repeat(12)}, the receipt of job ${k12()} here is sha256:${gen.receiptSha256.slice(0, 12)}`,
    });
  });

  it('a Genjob-Signer when the receipt verified against no pinned key', async () => {
    repo.commit(trailers(gen, 'ci-host'), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_SIGNER_MISMATCH',
      message: `Genjob-Signer names "ci-host", but the receipt of job ${k12()} verified against no pinned key`,
    });
  });

  it('a Genjob-Signer naming another key than the one that verified the receipt', async () => {
    const host = generateKeyPairSync('ed25519');
    const signed = await receive(
      repo,
      'Signed',
      { 'src/s.py': 's\n' },
      { sign: { privateKey: host.privateKey, keyid: 'x' } },
    );
    repo.commit(trailers(signed, 'laptop'), { 'src/s.py': 's\n' });
    const policy = { trusted: [{ name: 'ci-host', publicKey: host.publicKey }], requireSignature: false };
    expect(await failure(`${base}..HEAD`, { policy })).toEqual({
      key: signed.job.key,
      code: 'EGJ_COMMIT_SIGNER_MISMATCH',
      message: `Genjob-Signer names "laptop", but the receipt of job ${signed.job.key.slice(0, 12)} verified against "ci-host"`,
    });
  });

  it('a receipt replayed on newer history: the parent no longer holds the job’s input', async () => {
    const fix = repo.commit('security fix', { 'src/a.py': 'fixed\n' });
    repo.commit(trailers(gen), { 'src/a.py': NEW });
    expect(await failure(`${fix}..HEAD`)).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_STALE_BASE',
      message: `"src/a.py": the job was minted where it was sha256 ${sha256Hex(OLD).slice(0, 12)}, the commit's parent has sha256 ${sha256Hex('fixed\n').slice(0, 12)}; a receipt applies only on the history it was made for`,
    });
  });

  it('a receipt replayed over a change to a file the job only read (--read)', async () => {
    repo.commit('types', { 'src/types.py': 'Number = int\n' });
    const typed = await receive(repo, 'Type a.py', { 'src/a.py': NEW }, { reads: ['src/types.py'] });
    const fix = repo.commit('security note', { 'src/types.py': 'Number = int  # >= 0\n' });
    repo.commit(trailers(typed), { 'src/a.py': NEW });
    expect(await failure(`${fix}..HEAD`)).toEqual({
      key: typed.job.key,
      code: 'EGJ_COMMIT_STALE_BASE',
      message: `"src/types.py": the job was minted where it was sha256 ${sha256Hex('Number = int\n').slice(0, 12)}, the commit's parent has sha256 ${sha256Hex('Number = int  # >= 0\n').slice(0, 12)}; a receipt applies only on the history it was made for`,
    });
  });

  it('a job that creates a file, on a parent that already has it', async () => {
    const create = await receive(repo, 'Create n', { 'src/n.py': 'n\n' });
    const was = repo.commit('someone made it', { 'src/n.py': 'first\n' });
    repo.commit(trailers(create), { 'src/n.py': 'n\n' });
    expect((await failure(`${was}..HEAD`)).message).toBe(
      `"src/n.py": the job was minted where it was absent, the commit's parent has sha256 ${sha256Hex('first\n').slice(0, 12)}; a receipt applies only on the history it was made for`,
    );
  });

  it('a job minted from a file whose parent holds a symlink there', async () => {
    unlinkSync(join(repo.root, 'src/a.py'));
    symlinkSync('elsewhere', join(repo.root, 'src/a.py'));
    repo.git(['add', 'src/a.py']);
    const link = repo.commit('a link', {});
    unlinkSync(join(repo.root, 'src/a.py'));
    writeFileSync(join(repo.root, 'src/a.py'), NEW);
    repo.git(['add', 'src/a.py']);
    repo.git(['commit', '-qm', trailers(gen)]);
    expect((await failure(`${link}..HEAD`)).message).toMatch(
      /the commit's parent has an entry of mode 120000;/,
    );
  });

  it('a change to a path that is not an output', async () => {
    repo.commit(trailers(gen), { 'src/a.py': NEW, README: 'sneaked in\n' });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_EXTRA_CHANGE',
      message: 'changes "README", which is not an output of its receipt',
    });
  });

  it('a commit that deletes an output', async () => {
    repo.commit(trailers(gen), { 'src/a.py': null });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_EXTRA_CHANGE',
      message: 'deletes output "src/a.py"',
    });
  });

  it('a commit that turns an output into a symlink', async () => {
    repo.git(['rm', '-q', '--cached', 'src/a.py']);
    unlinkSync(join(repo.root, 'src/a.py'));
    const blob = repo.object('blob', NEW);
    repo.git(['update-index', '--add', '--cacheinfo', `120000,${blob},src/a.py`]);
    repo.commit(trailers(gen), {});
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_EXTRA_CHANGE',
      message: 'changes the type of output "src/a.py"',
    });
  });

  it('an output added as a symlink', async () => {
    const fresh = await receive(repo, 'Make n', { 'src/n.py': NEW });
    const blob = repo.object('blob', NEW);
    repo.git(['update-index', '--add', '--cacheinfo', `120000,${blob},src/n.py`]);
    repo.commit(trailers(fresh), {});
    expect(await failure()).toEqual({
      key: fresh.job.key,
      code: 'EGJ_COMMIT_EXTRA_CHANGE',
      message: 'output "src/n.py" has mode 120000, not a regular file',
    });
  });

  it('a commit that does not hold an output of its receipt', async () => {
    const both = await receive(repo, 'Touch two', { 'src/a.py': NEW, 'src/gone.py': 'g\n' });
    repo.commit(trailers(both), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key: both.job.key,
      code: 'EGJ_COMMIT_OUTPUT_MISSING',
      message: 'does not hold output "src/gone.py" of its receipt',
    });
  });

  it('an output committed as a directory', async () => {
    const dirOut = await receive(repo, 'Make s', { s: NEW });
    repo.commit(trailers(dirOut), { 's/inner': 'x\n' });
    const checks = await gate(repo, `${base}..HEAD`);
    expect(checks[0]).toMatchObject({ code: 'EGJ_COMMIT_EXTRA_CHANGE' });
  });

  it('an output whose committed bytes differ from the receipt’s', async () => {
    repo.commit(trailers(gen), { 'src/a.py': 'edited by hand\n' });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_BYTES_DIFFER',
      message: `"src/a.py" hashes to ${sha256Hex('edited by hand\n').slice(0, 12)} in the commit, the receipt says ${sha256Hex(NEW).slice(0, 12)}`,
    });
  });

  it('an output made executable that its receipt does not make executable', async () => {
    repo.commit(trailers(gen), { 'src/a.py': NEW }, { mode: '+x' });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_MODE_DIFFERS',
      message:
        'output "src/a.py" has mode 100755 in the commit; its receipt leaves the mode as it was (100644)',
    });
  });

  it('an output its receipt makes executable, committed without the bit', async () => {
    const x = await receive(repo, 'Make a script', { 'run.sh': 'echo\n' }, { executable: ['run.sh'] });
    repo.commit(trailers(x), { 'run.sh': 'echo\n' });
    expect(await failure()).toEqual({
      key: x.job.key,
      code: 'EGJ_COMMIT_MODE_DIFFERS',
      message: 'output "run.sh" has mode 100644 in the commit; its receipt makes it executable (100755)',
    });
  });

  it('an executable file whose executable bit the commit drops', async () => {
    repo.git(['update-index', '--chmod=+x', 'src/a.py']);
    const from = repo.commit('chmod', {});
    const r = await receive(repo, 'Rewrite the script', { 'src/a.py': NEW });
    repo.commit(trailers(r), { 'src/a.py': NEW }, { mode: '-x' });
    expect((await failure(`${from}..HEAD`)).message).toBe(
      'output "src/a.py" has mode 100644 in the commit; its receipt leaves the mode as it was (100755)',
    );
  });
});

describe('checkCommits over a range', () => {
  withRepo();
  it('checks every generated commit oldest first, or stops at the first failure', async () => {
    const bad = repo.commit(trailers(gen), { 'src/a.py': NEW, README: 'by hand\n' });
    const second = await receive(repo, 'Second', { 'src/b.py': 'b\n' });
    const good = repo.commit(trailers(second), { 'src/b.py': 'b\n' });
    const all = await gate(repo, `${base}..HEAD`);
    expect(all.map((c) => [c.commit, c.ok])).toEqual([
      [bad, false],
      [good, true],
    ]);
    const first = await gate(repo, `${base}..HEAD`, { stopAtFirst: true });
    expect(first.map((c) => [c.commit, c.ok])).toEqual([[bad, false]]);
    const fine = await gate(repo, `${bad}..HEAD`, { stopAtFirst: true });
    expect(fine.map((c) => [c.commit, c.ok])).toEqual([[good, true]]);
  });

  it('an empty list when the range holds no generated commit', async () => {
    repo.commit('people', { README: 'p\n' });
    expect(await gate(repo, `${base}..HEAD`, { requireGenjob: [] })).toEqual([]);
  });
});

describe('parseRaw (the diff-tree lines a generated commit is judged by)', () => {
  const raw = (...parts: string[]) => Buffer.from(parts.map((p) => `${p}\0`).join(''));
  const oid = (c: string) => c.repeat(40);

  it('reads the new mode, the new object, the status and the path of each change', () => {
    expect(
      parseRaw(
        raw(
          `:100644 100755 ${oid('a')} ${oid('b')} M`,
          'bin/run',
          `:000000 100644 ${oid('0')} ${oid('c')} A`,
          'new file',
          `:100644 000000 ${oid('d')} ${oid('0')} D`,
          'gone',
        ),
      ),
    ).toEqual([
      { newMode: '100755', newOid: oid('b'), status: 'M', path: 'bin/run' },
      { newMode: '100644', newOid: oid('c'), status: 'A', path: 'new file' },
      { newMode: '000000', newOid: oid('0'), status: 'D', path: 'gone' },
    ]);
    expect(parseRaw(Buffer.alloc(0))).toEqual([]);
  });

  it('takes a status with its score, and a line after a newline', () => {
    expect(parseRaw(raw(`\n:100644 100644 ${oid('a')} ${oid('b')} R100`, 'p'))).toEqual([
      { newMode: '100644', newOid: oid('b'), status: 'R', path: 'p' },
    ]);
  });

  it.each([
    ['a prefix', `x:100644 100644 ${'a'.repeat(40)} ${'b'.repeat(40)} M`],
    ['a suffix', `:100644 100644 ${'a'.repeat(40)} ${'b'.repeat(40)} Mx`],
    ['a trailing newline', `:100644 100644 ${'a'.repeat(40)} ${'b'.repeat(40)} M\n`],
    ['a lower-case status', `:100644 100644 ${'a'.repeat(40)} ${'b'.repeat(40)} m`],
    ['a mode that is not digits', `:100644 10064x ${'a'.repeat(40)} ${'b'.repeat(40)} M`],
    ['an object id that is not hex', `:100644 100644 ${'a'.repeat(40)} ${'g'.repeat(40)} M`],
  ])('refuses a line with %s (the gate never guesses what git meant)', (_what, line) => {
    expect(() => parseRaw(raw(line, 'p'))).toThrow(`git diff-tree: unexpected line ${JSON.stringify(line)}`);
  });
});
