// The merge gate on a real git repository: a commit carrying Genjob trailers passes only when its
// receipt is here, verifies, is the one its trailer names, and the commit changes exactly the receipt's
// outputs with the receipt's bytes. What a reviewer sees for each failure is pinned: the code and the
// message, per commit, oldest first.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { UsageError } from '../../src/core/errors.js';
import type { Job } from '../../src/core/job.js';
import { NO_TRUST, type ReceiptTrustPolicy, signReceipt } from '../../src/core/receipt-envelope.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { checkCommits, rangeArgs } from '../../src/git/commit-gate.js';
import { commitMessage } from '../../src/git/trailers.js';
import { beginAttempt } from '../../src/store/attempts.js';
import { publishExclusive } from '../../src/store/durable.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import { keyIdOf } from '../../src/trust/keys.js';
import { type Repo, tempGitRepo } from './git-repo.js';
import { jobWithReceipt } from './job-fixture.js';

const OLD = 'old\n';
const NEW = 'new\n';

interface Received {
  job: Job;
  receiptSha256: string;
}

/** A received job of `repo` whose receipt names `outputs` (path → bytes), its artifacts in out/. */
function receive(
  repo: Repo,
  instruction: string,
  outputs: Record<string, string>,
  sign?: { privateKey: import('node:crypto').KeyObject; keyid: string },
): Received {
  const store = repo.store;
  const { job, receipt } = jobWithReceipt(instruction, outputs);
  const bytes = sign ? signReceipt(receipt, sign.privateKey, sign.keyid) : canonicalBytes(receipt);
  publishExclusive(store, store.layout.jobFile('received', job.key), jobFileBytes(job));
  beginAttempt(store, job.key, { id: 'w', host: 'h', pid: 1 }, 60, 'local');
  publishExclusive(store, store.layout.receipt(job.key), bytes);
  for (const [path, text] of Object.entries(outputs)) {
    const file = join(store.layout.outDir(job.key), path);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, text);
  }
  return { job, receiptSha256: sha256Hex(bytes) };
}

const trailers = (r: Received, signer: string | null = null) =>
  commitMessage(r.job.instruction, r.job.key, r.receiptSha256, signer);

const gate = (
  repo: Repo,
  range: string,
  over: { policy?: ReceiptTrustPolicy; stopAtFirst?: boolean; requireGenjob?: string[] } = {},
) => checkCommits(repo.store, { range, policy: NO_TRUST, stopAtFirst: false, ...over });

let repo: Repo;
let base: string;
let gen: Received;
/** Each checkCommits test starts from a repository with a base commit and one received job. */
function withRepo(): void {
  beforeEach(() => {
    repo = tempGitRepo('gj-gate-');
    base = repo.commit('base', { '.gitignore': '.gen/\n', 'src/a.py': OLD, README: 'people\n' });
    gen = receive(repo, 'Rewrite a.py', { 'src/a.py': NEW });
  });
}

describe('checkCommits passes', () => {
  withRepo();
  it('a generated commit that changes exactly its outputs to the receipt bytes, and skips people’s commits', async () => {
    const person = repo.commit('people edit', { README: 'people 2\n' });
    const c = repo.commit(trailers(gen), { 'src/a.py': NEW });
    expect(person).not.toBe(c);
    expect(await gate(repo, `${base}..HEAD`)).toEqual([
      { commit: c, key: gen.job.key, ok: true, outputs: 1, signer: null },
    ]);
  });

  it('a generated root commit (no parent to compare with)', async () => {
    const fresh = tempGitRepo('gj-gate-root-');
    const r = receive(fresh, 'Make b', { 'b.txt': 'b\n' });
    const c = fresh.commit(trailers(r), { 'b.txt': 'b\n' });
    expect(await gate(fresh, 'HEAD')).toEqual([
      { commit: c, key: r.job.key, ok: true, outputs: 1, signer: null },
    ]);
  });

  it('an output committed executable (mode 100755)', async () => {
    const c = repo.commit(trailers(gen), { 'src/a.py': NEW }, { mode: '+x' });
    expect((await gate(repo, `${base}..HEAD`))[0]).toMatchObject({ commit: c, ok: true });
  });

  it('an output the commit leaves as it was, when its bytes are the receipt’s', async () => {
    const both = receive(repo, 'Touch two', { 'src/a.py': NEW, 'src/c.py': 'c\n' });
    repo.commit('people add c', { 'src/c.py': 'c\n' });
    const from = repo.git(['rev-parse', 'HEAD']);
    const c = repo.commit(trailers(both), { 'src/a.py': NEW });
    expect(await gate(repo, `${from}..HEAD`)).toEqual([
      { commit: c, key: both.job.key, ok: true, outputs: 2, signer: null },
    ]);
  });

  it('a signed receipt, naming the pinned key that verified it', async () => {
    const host = generateKeyPairSync('ed25519');
    const signed = receive(
      repo,
      'Signed',
      { 'src/s.py': 's\n' },
      { privateKey: host.privateKey, keyid: keyIdOf(host.publicKey) },
    );
    const c = repo.commit(trailers(signed, 'ci-host'), { 'src/s.py': 's\n' });
    const policy = { trusted: [{ name: 'ci-host', publicKey: host.publicKey }], requireSignature: false };
    expect(await gate(repo, `${base}..HEAD`, { policy })).toEqual([
      { commit: c, key: signed.job.key, ok: true, outputs: 1, signer: 'ci-host' },
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

  it('a merge commit is not itself a people’s commit under --require-genjob', async () => {
    repo.git(['checkout', '-q', '-b', 'side']);
    repo.commit('side', { 'side.txt': 's\n' });
    repo.git(['checkout', '-q', 'main']);
    const c = repo.commit(trailers(gen), { 'src/a.py': NEW });
    repo.git(['merge', '-q', '--no-ff', '-m', 'merge side', 'side']);
    expect(await gate(repo, `${base}..HEAD`, { requireGenjob: ['src/'] })).toEqual([
      { commit: c, key: gen.job.key, ok: true, outputs: 1, signer: null },
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

  it('a key with no receipt here, or not received here at all', async () => {
    unlinkSync(repo.store.layout.receipt(gen.job.key));
    repo.commit(trailers(gen), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_RECEIPT_MISSING',
      message: `no receipt for job ${k12()} here (run genjob pull first)`,
    });
    const unknown = 'f'.repeat(64);
    repo.commit(trailers(gen).replace(gen.job.key, unknown), { 'src/a.py': 'x\n' });
    const checks = await gate(repo, `${base}..HEAD`);
    expect(checks[1]).toMatchObject({
      key: unknown,
      code: 'EGJ_COMMIT_RECEIPT_MISSING',
      message: `no receipt for job ${'f'.repeat(12)} here (run genjob pull first)`,
    });
  });

  it('a receipt that fails a verify rule here, with the rule’s code and message', async () => {
    const artifact = join(repo.store.layout.outDir(gen.job.key), 'src/a.py');
    writeFileSync(artifact, 'drift\n');
    repo.commit(trailers(gen), { 'src/a.py': NEW });
    const f = await failure();
    expect(f.code).toBe('EGJ_ARTIFACT_DRIFT');
    expect(f.message).toMatch(new RegExp(`^receipt of job ${k12()}: .*src/a\\.py`));
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
    const signed = receive(
      repo,
      'Signed',
      { 'src/s.py': 's\n' },
      { privateKey: host.privateKey, keyid: 'x' },
    );
    repo.commit(trailers(signed, 'laptop'), { 'src/s.py': 's\n' });
    const policy = { trusted: [{ name: 'ci-host', publicKey: host.publicKey }], requireSignature: false };
    expect(await failure(`${base}..HEAD`, { policy })).toEqual({
      key: signed.job.key,
      code: 'EGJ_COMMIT_SIGNER_MISMATCH',
      message: `Genjob-Signer names "laptop", but the receipt of job ${signed.job.key.slice(0, 12)} verified against "ci-host"`,
    });
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
    const blob = repo.git(['hash-object', '-w', '--stdin'], NEW);
    repo.git(['update-index', '--add', '--cacheinfo', `120000,${blob},src/a.py`]);
    repo.commit(trailers(gen), {});
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_EXTRA_CHANGE',
      message: 'changes the type of output "src/a.py"',
    });
  });

  it('an output added as a symlink', async () => {
    const fresh = receive(repo, 'Make n', { 'src/n.py': NEW });
    const blob = repo.git(['hash-object', '-w', '--stdin'], NEW);
    repo.git(['update-index', '--add', '--cacheinfo', `120000,${blob},src/n.py`]);
    repo.commit(trailers(fresh), {});
    expect(await failure()).toEqual({
      key: fresh.job.key,
      code: 'EGJ_COMMIT_EXTRA_CHANGE',
      message: 'output "src/n.py" has mode 120000, not a regular file',
    });
  });

  it('a commit that does not hold an output of its receipt', async () => {
    const both = receive(repo, 'Touch two', { 'src/a.py': NEW, 'src/gone.py': 'g\n' });
    repo.commit(trailers(both), { 'src/a.py': NEW });
    expect(await failure()).toEqual({
      key: both.job.key,
      code: 'EGJ_COMMIT_OUTPUT_MISSING',
      message: 'does not hold output "src/gone.py" of its receipt',
    });
  });

  it('a commit where an output is a directory', async () => {
    const dirOut = receive(repo, 'Make src', { src: NEW });
    repo.commit(trailers(dirOut), {});
    expect(await failure()).toEqual({
      key: dirOut.job.key,
      code: 'EGJ_COMMIT_OUTPUT_MISSING',
      message: 'does not hold output "src" of its receipt',
    });
  });

  it('nothing, when reading the receipt’s artifacts fails: the I/O error is the caller’s to report', async () => {
    const outDir = repo.store.layout.outDir(gen.job.key);
    rmSync(outDir, { recursive: true });
    writeFileSync(outDir, 'not a directory');
    repo.commit(trailers(gen), { 'src/a.py': NEW });
    await expect(gate(repo, `${base}..HEAD`)).rejects.toMatchObject({ code: 'EGJ_IO' });
  });

  it('an output whose committed bytes differ from the receipt’s', async () => {
    repo.commit(trailers(gen), { 'src/a.py': 'edited by hand\n' });
    expect(await failure()).toEqual({
      key: gen.job.key,
      code: 'EGJ_COMMIT_BYTES_DIFFER',
      message: `"src/a.py" hashes to ${sha256Hex('edited by hand\n').slice(0, 12)} in the commit, the receipt says ${sha256Hex(NEW).slice(0, 12)}`,
    });
  });
});

describe('checkCommits over a range', () => {
  withRepo();
  it('checks every generated commit oldest first, or stops at the first failure', async () => {
    const bad = repo.commit(trailers(gen), { 'src/a.py': 'by hand\n' });
    const good = repo.commit(trailers(gen), { 'src/a.py': NEW });
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

describe('rangeArgs', () => {
  it('splits the range into revisions and keeps --not, --remotes, --branches, --tags', () => {
    expect(rangeArgs('  main..feature \t HEAD~2 ')).toEqual(['main..feature', 'HEAD~2']);
    expect(rangeArgs('HEAD --not --remotes=origin --branches --tags=v*')).toEqual([
      'HEAD',
      '--not',
      '--remotes=origin',
      '--branches',
      '--tags=v*',
    ]);
  });

  it('refuses an empty range', () => {
    expect(() => rangeArgs(' \t')).toThrow(new UsageError('EGJ_USAGE', '--commits: the range is empty'));
  });

  it.each(['--all', '--output=/tmp/x', '-p', '--notx', '--remotes=a=b', '---not'])(
    'refuses the option %s',
    (opt) => {
      let err: unknown;
      try {
        rangeArgs(`HEAD ${opt}`);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).code).toBe('EGJ_USAGE');
      expect((err as UsageError).message).toBe(
        `--commits: ${JSON.stringify(opt)}: a range holds revisions (and --not, --remotes=, --branches=), no other options`,
      );
    },
  );
});
