// The merge gate with checks, across machines, over a real bare repository (file://). Machine A pins
// its check key for checks on main, then on a feature branch generates a change, checks it (signed),
// applies it with --require-check --commit, and pushes the branch, the material and the record. A
// second clone runs the CI recipe `genjob pull && genjob verify --commits origin/main..HEAD
// --require-check tests` and passes. Then it fails, each time naming the commit and the rule, with
// the record missing, forged (bytes that are not their name; a consistent pass record nobody pinned
// signed; one signed by a key the branch under review pins for checks in its own genjob-trust.json: the
// gate's check keys are the base's), stale (the base redefines the checker, for A...B too, whose merge base
// the branch chose) or made for another tree (the commit rebased).

import { createPublicKey } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../bench/fixtures.mjs';
import { encodeRecord } from '../../src/check/record.js';
import { keyIdOf, loadPrivateKey } from '../../src/trust/keys.js';
import { tempDir } from '../helpers/temp-store.js';
import { CALC, CALC_GOOD, gitIdentityEnv, TEST_CALC, UNITTEST } from './check-helpers.js';
import { git } from './git-helpers.js';
import { type CliResult, runCli } from './helpers.js';
import { publicKeyOfFile } from './trust-helpers.js';

interface World {
  base: string;
  bare: string;
  env: Record<string, string>;
  key: string;
  commit: string;
  record: string;
}

let w: World;

function cli(cwd: string, args: readonly string[]): Promise<CliResult> {
  return runCli(args, {
    cwd,
    env: { ...w.env, XDG_CACHE_HOME: join(w.base, 'cache'), GENJOB_GENERATOR_BIND_RW: w.base },
  });
}

/** A clone of the feature branch of `bare` with its material pulled; returns the clone. */
async function secondClone(bare: string, name: string): Promise<{ dir: string; pull: CliResult }> {
  const dir = join(w.base, name);
  await git(w.base, ['clone', '-q', '-b', 'feature', `file://${bare}`, dir], w.env);
  return { dir, pull: await cli(dir, ['pull']) };
}

function gate(dir: string, base = 'origin/main'): Promise<CliResult> {
  return cli(dir, ['verify', '--commits', `${base}..HEAD`, '--require-check', 'tests']);
}

/** Branch `stricter` in `dir`: main, then a commit that makes the `tests` checker's command stricter. */
async function stricterBranch(dir: string): Promise<void> {
  await git(dir, ['checkout', '-q', '-b', 'stricter', 'origin/main'], w.env);
  writeFileSync(
    join(dir, 'genjob.config.json'),
    `${JSON.stringify({ checkers: { tests: { run: `${UNITTEST} -v` } } })}\n`,
  );
  await git(dir, ['commit', '-qam', 'a stricter test command'], w.env);
  await git(dir, ['checkout', '-q', 'feature'], w.env);
}

function copyRemote(name: string): string {
  const copy = join(w.base, `${name}.git`);
  cpSync(w.bare, copy, { recursive: true });
  return copy;
}

// the repositories every test shares, made once (removed after the file's last test)
beforeAll(async () => {
  const base = tempDir('gj-check-gate-', tmpdir(), 'file');
  const env = gitIdentityEnv(base);
  const bare = join(base, 'origin.git');
  w = { base, bare, env, key: '', commit: '', record: '' };
  await git(base, ['init', '-q', '--bare', '-b', 'main', bare], env);
  const a = join(base, 'a');
  const write = (p: string, t: string) => writeFileSync(join(a, p), t);
  await git(base, ['init', '-q', '-b', 'main', a], env);
  mkdirSync(join(a, 'tests'));
  write('calc.py', CALC);
  write('tests/test_calc.py', TEST_CALC);
  write('.gitignore', '.gen/\n__pycache__/\n');
  write('genjob.config.json', `${JSON.stringify({ checkers: { tests: { run: UNITTEST } } })}\n`);
  // the check key, pinned for checks on main: the base every gate reads
  const keyFile = join(base, 'check.key');
  expect((await cli(a, ['keygen', '--out', keyFile])).exitCode).toBe(0);
  const pinned = await cli(a, ['trust', 'add', 'ci', publicKeyOfFile(keyFile).publicKey, '--for', 'checks']);
  expect(pinned.exitCode, pinned.stderr).toBe(0);
  await git(a, ['add', '-A'], env);
  await git(a, ['commit', '-qm', 'calc, its test, the checker, the pinned check key'], env);
  await git(a, ['remote', 'add', 'origin', `file://${bare}`], env);
  await git(a, ['push', '-q', 'origin', 'main'], env);
  await git(a, ['checkout', '-q', '-b', 'feature'], env);
  // a job whose generator writes CALC_GOOD
  const gen = join(base, 'gen.mjs');
  writeFileSync(
    gen,
    `import { writeFileSync } from 'node:fs';\nwriteFileSync('calc.py', ${JSON.stringify(CALC_GOOD)});\n`,
  );
  const minted = await cli(a, ['mint', '--json', '-m', 'Document add', 'calc.py']);
  w.key = JSON.parse(minted.stdout).key;
  expect((await cli(a, ['work', '--once', '--quiet', '--generator', `node ${gen}`])).exitCode).toBe(0);
  const checked = await cli(a, ['check', w.key, '--sign-key', keyFile]);
  expect(checked.exitCode, checked.stdout + checked.stderr).toBe(0);
  const applied = await cli(a, ['apply', w.key, '--require-check', 'tests', '--commit']);
  expect(applied.exitCode, applied.stderr).toBe(0);
  w.commit = await git(a, ['rev-parse', 'HEAD'], env);
  w.record = /Genjob-Check: tests sha256:([0-9a-f]{64})/.exec(
    await git(a, ['log', '-1', '--format=%B'], env),
  )![1]!;
  await git(a, ['push', '-q', 'origin', 'feature'], env);
  const push = await cli(a, ['push']);
  expect(push.exitCode, push.stderr).toBe(0);
  expect(push.stdout).toBe(
    '1 key(s) pushed to origin, 0 already there; 1 check record(s) pushed, 0 already there\n',
  );
});

describe('verify --commits --require-check in a second clone', () => {
  it('passes with the pushed record: the commit’s tree is the tree the tests passed on', async () => {
    const { dir, pull } = await secondClone(w.bare, 'b');
    expect(pull.exitCode, pull.stderr).toBe(0);
    expect(pull.stdout).toBe('1 key(s) of verification material from origin, 1 check record(s)\n');
    // pulled records stay refs: nothing enters .gen/
    expect(existsSync(join(dir, '.gen'))).toBe(false);
    const r = await gate(dir);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      `${w.commit.slice(0, 12)} ok: job ${w.key.slice(0, 12)}, exactly its 1 output(s), tests passed (record ${w.record.slice(0, 12)})\n`,
    );
    const json = JSON.parse(
      (await cli(dir, ['verify', '--json', '--commits', 'origin/main..HEAD', '--require-check', 'tests']))
        .stdout,
    );
    expect(json.commits[0].checks).toEqual([{ name: 'tests', digest: w.record }]);
    // pulling again is the same mirror
    const again = await cli(dir, ['pull']);
    expect(again.stderr).toBe('');
    expect(again.stdout).toBe('1 key(s) of verification material from origin, 1 check record(s)\n');
  });

  it('fails with the record missing', async () => {
    const bare = copyRemote('missing');
    await git(bare, ['update-ref', '-d', `refs/genjob/checks/${w.key}/${w.record}`], w.env);
    const { dir, pull } = await secondClone(bare, 'c-missing');
    expect(pull.exitCode, pull.stderr).toBe(0);
    const r = await gate(dir);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_CHECK_MISSING: commit ${w.commit.slice(0, 12)}: job ${w.key.slice(0, 12)}: no check record for tests`,
      ),
    );
  });

  it('fails with a forged record: bytes that are not their name are skipped by pull, named', async () => {
    const bare = copyRemote('forged-bytes');
    const ref = `refs/genjob/checks/${w.key}/${w.record}`;
    const blob = await git(bare, ['cat-file', 'blob', `${ref}:record.json`], w.env);
    // any byte changed: here the signature's key id
    const forged = blob.replace('"keyid":"', '"keyid":"0');
    expect(forged).not.toBe(blob);
    const oid = await git(bare, ['hash-object', '-w', '--stdin'], w.env, forged);
    const tree = await git(bare, ['mktree'], w.env, `100644 blob ${oid}\trecord.json\n`);
    const commit = await git(bare, ['commit-tree', tree, '-m', 'forged'], w.env);
    await git(bare, ['update-ref', ref, commit], w.env);
    const { dir, pull } = await secondClone(bare, 'c-forged');
    expect(pull.exitCode, pull.stderr).toBe(0);
    expect(pull.stderr).toBe(
      `genjob: warning: origin ${ref}: the record does not hash to the digest its ref names; skipped (a gate that needs this key fails)\n`,
    );
    const r = await gate(dir);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/EGJ_CHECK_MISSING: .*no check record for tests/);
  });

  it('fails with a forged record that is consistent but not signed by the pinned check key', async () => {
    const bare = copyRemote('forged-unsigned');
    const ref = `refs/genjob/checks/${w.key}/${w.record}`;
    const envelope = JSON.parse(await git(bare, ['cat-file', 'blob', `${ref}:record.json`], w.env));
    // the Statement itself, unsigned, under its own digest: a pass for exactly this commit's tree
    const statement = Buffer.from(envelope.payload, 'base64').toString('utf8');
    const digest = sha256(statement);
    const oid = await git(bare, ['hash-object', '-w', '--stdin'], w.env, statement);
    const tree = await git(bare, ['mktree'], w.env, `100644 blob ${oid}\trecord.json\n`);
    const commit = await git(bare, ['commit-tree', tree, '-m', 'unsigned'], w.env);
    await git(bare, ['update-ref', '-d', ref], w.env);
    await git(bare, ['update-ref', `refs/genjob/checks/${w.key}/${digest}`, commit], w.env);
    const { dir, pull } = await secondClone(bare, 'c-unsigned');
    expect(pull.exitCode, pull.stderr).toBe(0);
    // pull judges no signature (the gate does, under its base's keys): a well-formed record is mirrored
    expect(pull.stdout).toBe('1 key(s) of verification material from origin, 1 check record(s)\n');
    const r = await gate(dir);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/EGJ_CHECK_MISSING: .*ignored: not signed, but keys are pinned for checks/);
  });

  it('forged: a branch that pins its own check signer for a record it signed does not pass', async () => {
    // someone who can push refs/genjob/ but holds no pinned check key: a pass record for exactly this
    // commit, signed by their own key, in place of the CI's record ...
    const bare = copyRemote('forged-signer');
    const ref = `refs/genjob/checks/${w.key}/${w.record}`;
    const envelope = JSON.parse(await git(bare, ['cat-file', 'blob', `${ref}:record.json`], w.env));
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
    const evilKey = join(w.base, 'evil.key');
    expect((await cli(w.base, ['keygen', '--out', evilKey])).exitCode).toBe(0);
    const evil = publicKeyOfFile(evilKey).publicKey;
    const key = loadPrivateKey(evilKey);
    const forged = encodeRecord(statement, { key, keyid: keyIdOf(createPublicKey(key)) }).toString('utf8');
    const oid = await git(bare, ['hash-object', '-w', '--stdin'], w.env, forged);
    const tree = await git(bare, ['mktree'], w.env, `100644 blob ${oid}\trecord.json\n`);
    const commit = await git(bare, ['commit-tree', tree, '-m', 'forged'], w.env);
    await git(bare, ['update-ref', '-d', ref], w.env);
    await git(bare, ['update-ref', `refs/genjob/checks/${w.key}/${sha256(forged)}`, commit], w.env);
    // ... and, in the branch under review, their key pinned for checks: the checkout CI pulls in
    const dir = join(w.base, 'c-evil-signer');
    await git(w.base, ['clone', '-q', '-b', 'feature', `file://${bare}`, dir], w.env);
    const pinned = await cli(dir, ['trust', 'add', 'evil', evil, '--for', 'checks']);
    expect(pinned.exitCode, pinned.stderr).toBe(0);
    await git(dir, ['commit', '-qam', 'trust evil for checks'], w.env);
    const pull = await cli(dir, ['pull']);
    expect(pull.exitCode, pull.stderr).toBe(0);
    const r = await gate(dir);
    expect(r.exitCode, r.stdout).toBe(3);
    expect(r.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_CHECK_MISSING: commit ${w.commit.slice(0, 12)}: job ${w.key.slice(0, 12)}: no check record for tests \\(1 record file\\(s\\) ignored: no key pinned for checks verifies its signature`,
      ),
    );
  });

  it('fails stale when the range’s base redefines the checker', async () => {
    const { dir } = await secondClone(w.bare, 'c-stale');
    await stricterBranch(dir);
    const r = await gate(dir, 'stricter');
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(
      /EGJ_CHECK_STALE: commit [0-9a-f]{12}: job [0-9a-f]{12}: tests: record [0-9a-f]{12} is stale \(the checker changed/,
    );
    // and the branch under review cannot redefine it: the base's definition is the one that counts
    writeFileSync(
      join(dir, 'genjob.config.json'),
      `${JSON.stringify({ checkers: { tests: { run: 'true' } } })}\n`,
    );
    expect((await gate(dir)).exitCode).toBe(0);
  });

  it('forged: A...B of a branch forked before A redefined the checker holds it to A’s definition, not the fork’s', async () => {
    const { dir } = await secondClone(w.bare, 'c-stale-three');
    await stricterBranch(dir);
    // the merge base is the fork, which still declares the old command: the record made under it is stale
    const r = await cli(dir, [
      'verify',
      '--json',
      '--commits',
      'stricter...HEAD',
      '--require-check',
      'tests',
    ]);
    expect(r.exitCode, r.stdout).toBe(3);
    const failed = JSON.parse(r.stdout).commits.filter((c: { ok: boolean }) => !c.ok);
    expect(failed.map((c: { code: string }) => c.code)).toContain('EGJ_CHECK_STALE');
  });

  it('refuses a checker the range’s base does not declare, saying whether its genjob.config.json is there at all (exit 2)', async () => {
    const { dir } = await secondClone(w.bare, 'c-undeclared');
    await git(dir, ['checkout', '-q', '-b', 'lint-only', 'origin/main'], w.env);
    writeFileSync(
      join(dir, 'genjob.config.json'),
      `${JSON.stringify({ checkers: { lint: { run: 'true' } } })}\n`,
    );
    await git(dir, ['commit', '-qam', 'lint only'], w.env);
    const lintOnly = (await git(dir, ['rev-parse', 'HEAD'], w.env)).slice(0, 12);
    await git(dir, ['rm', '-q', 'genjob.config.json'], w.env);
    await git(dir, ['commit', '-qm', 'no config'], w.env);
    const none = (await git(dir, ['rev-parse', 'HEAD'], w.env)).slice(0, 12);
    await git(dir, ['checkout', '-q', 'feature'], w.env);
    const declared = await gate(dir, `${lintOnly}`);
    expect(declared.exitCode).toBe(2);
    expect(declared.stderr).toBe(
      `genjob: EGJ_CHECKER_UNKNOWN: --require-check tests: ${lintOnly}:genjob.config.json (the range's base ${lintOnly}) declares no such checker (it declares lint)\n`,
    );
    const missing = await gate(dir, `${none}`);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toBe(
      `genjob: EGJ_CHECKER_UNKNOWN: --require-check tests: the range's base ${none} has no genjob.config.json, so it declares no checker (the gate reads checkers from there, never from the branch)\n`,
    );
  });

  it('fails for another tree: the generated commit rebased onto a new base', async () => {
    const { dir } = await secondClone(w.bare, 'c-rebased');
    await git(dir, ['checkout', '-q', '-b', 'moved', 'origin/main'], w.env);
    writeFileSync(join(dir, 'NOTES.md'), 'an unrelated commit on main\n');
    await git(dir, ['add', 'NOTES.md'], w.env);
    await git(dir, ['commit', '-qm', 'notes'], w.env);
    await git(dir, ['checkout', '-q', 'feature'], w.env);
    await git(dir, ['rebase', '-q', 'moved'], w.env);
    const r = await gate(dir, 'moved');
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(
      /EGJ_CHECK_STALE: .*tests: record [0-9a-f]{12} was made for another tree \([0-9a-f]{12}, on [0-9a-f]{12}\); this commit's tree is [0-9a-f]{12}/,
    );
    expect(readFileSync(join(dir, 'calc.py'), 'utf8')).toBe(CALC_GOOD);
  });
});
