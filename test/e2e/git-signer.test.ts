// Genjob-Signer end to end over a real bare repository (file://). The team pins a host key in
// genjob-trust.json (committed). Machine A's worker signs its receipts with that key; `apply --commit`
// puts `Genjob-Signer: <name>` in the commit; B, a fresh clone, runs the CI recipe and the gate names
// the signer. A commit whose Genjob-Signer names another signer than the one the receipt verified
// against fails B's gate with EGJ_COMMIT_SIGNER_MISMATCH (exit 3), naming the commit.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../bench/fixtures.mjs';
import { worldCli as cli, cloneBranch, git, gitEnv } from './git-helpers.js';
import { DEMO_GENERATOR, FIXTURE, TIMEOUT_INSTRUCTION } from './helpers.js';

const SIGNER = 'ci-host';

interface World {
  base: string;
  bare: string;
  a: string;
  env: Record<string, string>;
  key: string;
  commit: string;
}

async function setup(): Promise<World> {
  const base = mkdtempSync(join(tmpdir(), 'gj-signer-'));
  const env = gitEnv(base);
  const bare = join(base, 'origin.git');
  const a = join(base, 'a');
  await git(base, ['init', '-q', '--bare', '-b', 'main', bare], env);
  cpSync(FIXTURE, a, { recursive: true });
  writeFileSync(join(a, '.gitignore'), '.gen/\n');
  await git(a, ['init', '-q', '-b', 'main'], env);
  const w = { base, env };
  // the team's pinned host key, committed with the code
  const hostKey = join(base, 'host.key');
  const keygen = await cli(w, a, ['keygen', '--json', '--out', hostKey]);
  expect(keygen.exitCode, keygen.stderr).toBe(0);
  const add = await cli(w, a, ['trust', 'add', SIGNER, JSON.parse(keygen.stdout).publicKey]);
  expect(add.exitCode, add.stderr).toBe(0);
  await git(a, ['add', '-A'], env);
  await git(a, ['commit', '-qm', 'the toy repository, with its pinned host key'], env);
  await git(a, ['remote', 'add', 'origin', `file://${bare}`], env);
  await git(a, ['push', '-q', 'origin', 'main'], env);
  await git(a, ['checkout', '-q', '-b', 'feature'], env);
  const mint = await cli(w, a, [
    'mint',
    '--json',
    '-m',
    TIMEOUT_INSTRUCTION,
    'src/user.py',
    'tests/test_user.py',
  ]);
  expect(mint.exitCode, mint.stderr).toBe(0);
  const key = JSON.parse(mint.stdout).key as string;
  const work = await cli(w, a, ['work', '--drain', '--quiet', '--generator', DEMO_GENERATOR], {
    GENJOB_SIGN_KEY: hostKey,
  });
  expect(work.exitCode, work.stderr).toBe(0);
  const apply = await cli(w, a, ['apply', '--all', '--commit']);
  expect(apply.exitCode, apply.stderr).toBe(0);
  await git(a, ['push', '-q', 'origin', 'feature'], env);
  const push = await cli(w, a, ['push']);
  expect(push.exitCode, push.stderr).toBe(0);
  return { base, bare, a, env, key, commit: await git(a, ['rev-parse', 'HEAD'], env) };
}

/** B: a fresh clone of `bare`'s feature branch runs the CI recipe. */
async function gate(w: World, bare: string, name: string) {
  const b = await cloneBranch(w.base, `file://${bare}`, name, w.env);
  const pull = await cli(w, b, ['pull']);
  expect(pull.exitCode, pull.stderr).toBe(0);
  return cli(w, b, ['verify', '--commits', 'origin/main..HEAD']);
}

describe('Genjob-Signer through the remote', () => {
  let w: World;
  beforeAll(async () => {
    w = await setup();
  });
  afterAll(() => {
    if (w) rmSync(w.base, { recursive: true, force: true });
  });

  it('apply --commit names the pinned key the receipt verified against in a Genjob-Signer trailer', async () => {
    const receipt = sha256(readFileSync(join(w.a, '.gen/receipts', `${w.key}.json`)));
    const message = await git(w.a, ['log', '-1', '--format=%s%n%(trailers)'], w.env);
    expect(message.trim()).toBe(
      `${TIMEOUT_INSTRUCTION}\nGenjob-Key: ${w.key}\nGenjob-Receipt: sha256:${receipt}\nGenjob-Signer: ${SIGNER}`,
    );
  });

  it("passes B's gate, which prints the signer", async () => {
    const verify = await gate(w, w.bare, 'b-ok');
    expect(verify.exitCode, verify.stderr).toBe(0);
    expect(verify.stdout).toBe(
      `${w.commit.slice(0, 12)} ok: job ${w.key.slice(0, 12)}, exactly its 2 output(s), signed by ${SIGNER}\n`,
    );
  });

  it("fails B's gate when the Genjob-Signer trailer names another signer (EGJ_COMMIT_SIGNER_MISMATCH)", async () => {
    const bare = join(w.base, 'forged.git');
    cpSync(w.bare, bare, { recursive: true });
    const c = await cloneBranch(w.base, `file://${bare}`, 'c-forged', w.env);
    const message = (await git(c, ['log', '-1', '--format=%B'], w.env)).replace(
      `Genjob-Signer: ${SIGNER}`,
      'Genjob-Signer: release-host',
    );
    await git(c, ['commit', '-q', '--amend', '-F', '-'], w.env, message);
    await git(c, ['push', '-q', '--force', 'origin', 'feature'], w.env);
    const forged = await git(c, ['rev-parse', 'HEAD'], w.env);
    const verify = await gate(w, bare, 'b-forged');
    expect(verify).toMatchObject({
      exitCode: 3,
      stdout: '',
      stderr: `genjob: EGJ_COMMIT_SIGNER_MISMATCH: commit ${forged.slice(0, 12)}: Genjob-Signer names "release-host", but the receipt of job ${w.key.slice(0, 12)} verified against "${SIGNER}"\n`,
    });
  });
});
