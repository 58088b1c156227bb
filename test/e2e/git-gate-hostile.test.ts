// The merge gate against an attacker who can push a branch or open a pull request from a fork, over a
// real bare repository reached by file:// and by ssh (the suite's sshd). The team pins its host key
// "ci-host" in genjob-trust.json on main; main holds a signed generated commit (the timeout job) and a
// later security fix to the same file; the team's feature branch holds signed generated commits (a
// README job, a script the generator made executable, whose line smuggles a bidi override, a
// zero-width space and tag characters the gate warns of, and a trust change made through a job). Each
// attack runs the CI recipe `genjob pull && genjob verify --commits origin/main..HEAD` on a fresh clone:
//   - trust from the branch: a person's commit re-pins "ci-host" to the attacker's key;
//   - the fork-PR shape: no access to refs/genjob/ nor to the pinned key, so the branch commits the
//     forged material under .gen/ (and re-pins the key);
//   - a stale receipt replayed on newer history, undoing the security fix;
//   - an evil merge editing a protected path beyond the automatic merge;
//   - an output made executable behind its receipt's back;
//   - a malformed ref under refs/genjob/ (pull skips it; only a gate needing that key fails);
// and pulled material never becomes the user's jobs (not after gc either).
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import { worldCli as cli, FILE_TRANSPORT, git, gitEnv, sshTransport, type Transport } from './git-helpers.js';
import { DEMO_GENERATOR, FIXTURE, TIMEOUT_INSTRUCTION } from './helpers.js';

const sshd = useSshd();
const PROTECT = ['--require-genjob', 'src/'];

interface World {
  base: string;
  bare: string;
  env: Record<string, string>;
  /** How this describe's clones reach the remotes (the team's own machine uses file://). */
  t: Transport;
  /** The team's machine: main and feature, every job applied and committed there. */
  a: string;
  hostPub: string;
  attackerKey: string;
  attackerPub: string;
  keys: { timeout: string; readme: string; script: string; trust: string };
  /** main: the generated timeout commit, then the security fix. feature: readme, script, trust. */
  commits: { timeout: string; fix: string; readme: string; script: string; trust: string };
}

async function ok(p: ReturnType<typeof cli>) {
  const r = await p;
  expect(r.exitCode, `${r.stderr}${r.stdout}`).toBe(0);
  return r;
}

const head = (dir: string, w: World) => git(dir, ['rev-parse', 'HEAD'], w.env);

/** The team's world, made once: every transport's attacks and CI clones reach the same bare repository. */
async function setup(): Promise<Omit<World, 't'>> {
  const base = mkdtempSync(join(tmpdir(), 'gj-hostile-'));
  const env = gitEnv(base, sshTransport(sshd).env());
  const t = FILE_TRANSPORT;
  const w0 = { base, env };
  const bare = join(base, 'origin.git');
  await git(base, ['init', '-q', '--bare', '-b', 'main', bare], env);
  const a = join(base, 'a');
  cpSync(FIXTURE, a, { recursive: true });
  writeFileSync(join(a, '.gitignore'), '.gen/\n');
  const hostKey = join(base, 'host.key');
  const hostPub = JSON.parse(
    (await ok(cli(w0, base, ['keygen', '--json', '--out', hostKey]))).stdout,
  ).publicKey;
  const attackerKey = join(base, 'attacker.key');
  const attackerPub = JSON.parse(
    (await ok(cli(w0, base, ['keygen', '--json', '--out', attackerKey]))).stdout,
  ).publicKey;
  await git(a, ['init', '-q', '-b', 'main'], env);
  await ok(cli(w0, a, ['trust', 'add', 'ci-host', hostPub]));
  await git(a, ['add', '-A'], env);
  await git(a, ['commit', '-qm', 'the toy repository, pinning ci-host'], env);
  await git(a, ['remote', 'add', 'origin', t.url(bare)], env);
  const mint = async (args: string[]) =>
    JSON.parse((await ok(cli(w0, a, ['mint', '--json', ...args]))).stdout).key;
  const work = (generator: string) =>
    ok(cli(w0, a, ['work', '--drain', '--quiet', '--generator', generator], { GENJOB_SIGN_KEY: hostKey }));
  // main: the timeout job, then a person's security fix to the same file
  const timeout = await mint(['-m', TIMEOUT_INSTRUCTION, 'src/user.py', 'tests/test_user.py']);
  await work(DEMO_GENERATOR);
  await ok(cli(w0, a, ['apply', '--all', '--commit']));
  const timeoutCommit = await head(a, { env } as World);
  writeFileSync(join(a, 'src/user.py'), `${readFileSync(join(a, 'src/user.py'), 'utf8')}# security fix\n`);
  await git(a, ['commit', '-qam', 'security fix'], env);
  const fix = await head(a, { env } as World);
  await git(a, ['push', '-q', 'origin', 'main'], env);
  // feature: three more generated commits
  await git(a, ['checkout', '-q', '-b', 'feature'], env);
  const readme = await mint(['-m', 'Explain the config in the README', 'README.md']);
  await work(DEMO_GENERATOR);
  await ok(cli(w0, a, ['apply', '--all', '--commit']));
  const readmeCommit = await head(a, { env } as World);
  const script = await mint(['-m', 'Add a run script', '--create', 'run.sh']);
  // its line carries a right-to-left override, a zero-width space and tag characters spelling "OK"
  // (UTF-8, as printf's octal escapes)
  await work(
    `printf '#!/bin/sh\\necho "hi \\342\\200\\256 \\342\\200\\213 \\363\\240\\201\\217\\363\\240\\201\\213"\\n' > run.sh && chmod +x run.sh`,
  );
  await ok(cli(w0, a, ['apply', '--all', '--commit']));
  const scriptCommit = await head(a, { env } as World);
  const second = JSON.parse(
    (await ok(cli(w0, base, ['keygen', '--json', '--out', join(base, 'host2.key')]))).stdout,
  ).publicKey;
  const trustDoc = JSON.parse(readFileSync(join(a, 'genjob-trust.json'), 'utf8'));
  trustDoc.keys.push({ name: 'ci-host-2', key: second, added: '2026-12-01T00:00:00.000Z' });
  const trust = await mint(['-m', 'Trust ci-host-2', 'genjob-trust.json']);
  await work(`printf '%s\\n' '${JSON.stringify(trustDoc)}' > genjob-trust.json`);
  await ok(cli(w0, a, ['apply', '--all', '--commit']));
  const trustCommit = await head(a, { env } as World);
  await git(a, ['push', '-q', 'origin', 'feature'], env);
  await ok(cli(w0, a, ['push']));
  return {
    base,
    bare,
    env,
    a,
    hostPub,
    attackerKey,
    attackerPub,
    keys: { timeout, readme, script, trust },
    commits: { timeout: timeoutCommit, fix, readme: readmeCommit, script: scriptCommit, trust: trustCommit },
  };
}

/** A copy of the remote, for an attacker who may push to it. */
function copyRemote(w: World, name: string): string {
  const copy = join(w.base, `${name}-${w.t.name.replace(/\W/g, '')}.git`);
  cpSync(w.bare, copy, { recursive: true });
  return copy;
}

/** A clone of `bare` (main checked out), then `branch` of it checked out, or of `fork` (a pull request). */
async function clone(
  w: World,
  bare: string,
  name: string,
  opts: { branch?: string; fork?: { bare: string; branch: string } } = {},
): Promise<string> {
  const dir = join(w.base, `${name}-${w.t.name.replace(/\W/g, '')}`);
  await git(w.base, ['clone', '-q', w.t.url(bare), dir], w.env);
  if (opts.branch) await git(dir, ['checkout', '-q', '-b', opts.branch, `origin/${opts.branch}`], w.env);
  if (opts.fork) {
    await git(dir, ['fetch', '-q', w.t.url(opts.fork.bare), opts.fork.branch], w.env);
    await git(dir, ['checkout', '-q', '-b', 'pr', 'FETCH_HEAD'], w.env);
  }
  return dir;
}

/** The CI recipe on `dir`: pull, then the gate (with `extra` flags). */
async function ci(w: World, dir: string, extra: readonly string[] = []) {
  const pull = await cli(w, dir, ['pull']);
  expect(pull.exitCode, pull.stderr).toBe(0);
  return cli(w, dir, ['verify', '--commits', 'origin/main..HEAD', ...extra]);
}

/** The attacker's forged job on src/user.py, signed with the attacker's key, committed as "signed by ci-host". */
async function forge(w: World, dir: string): Promise<{ repin: string; forged: string; key: string }> {
  await ok(cli(w, dir, ['trust', 'remove', 'ci-host']));
  await ok(cli(w, dir, ['trust', 'add', 'ci-host', w.attackerPub]));
  await git(dir, ['commit', '-qam', 'tidy the trust file'], w.env);
  const repin = await head(dir, w);
  const mint = await ok(cli(w, dir, ['mint', '--json', '-m', 'Add a retries to fetch_user', 'src/user.py']));
  const key = JSON.parse(mint.stdout).key as string;
  await ok(
    cli(w, dir, ['work', '--drain', '--quiet', '--generator', DEMO_GENERATOR], {
      GENJOB_SIGN_KEY: w.attackerKey,
    }),
  );
  await ok(cli(w, dir, ['apply', '--all', '--commit']));
  const forged = await head(dir, w);
  const signer = await git(dir, ['log', '-1', '--format=%(trailers:key=Genjob-Signer,valueonly)'], w.env);
  expect(signer.trim()).toBe('ci-host');
  return { repin, forged, key };
}

const short = (c: string) => c.slice(0, 12);

let team: Omit<World, 't'> | undefined;
beforeAll(async () => {
  team = await setup();
});
afterAll(() => {
  if (team) rmSync(team.base, { recursive: true, force: true });
});

describe.each([{ transport: FILE_TRANSPORT }, { transport: sshTransport(sshd) }])(
  'the merge gate under attack, over $transport.name',
  ({ transport }) => {
    let w: World;
    beforeAll(() => {
      w = { ...team!, t: transport };
    });
    // where the transport plays no part (no fetch or push beyond cloning), once over file:// is enough
    const fileOnly = transport === FILE_TRANSPORT ? it : it.skip;

    fileOnly(
      'passes the team’s branch, printing every passing commit, the signer, the trust change made through a job and the hidden characters a generated script adds',
      async () => {
        const b = await clone(w, w.bare, 'b-feature', { branch: 'feature' });
        const verify = await ci(w, b, PROTECT);
        expect(verify.exitCode, verify.stderr).toBe(0);
        expect(verify.stdout).toBe(
          `${short(w.commits.readme)} ok: job ${short(w.keys.readme)}, exactly its 1 output(s), signed by ci-host\n` +
            `${short(w.commits.script)} ok: job ${short(w.keys.script)}, exactly its 1 output(s), signed by ci-host; warning: its outputs add 4 hidden character(s) (bidirectional controls or invisible code points), which can make code read differently from how it runs; tag characters new in its outputs spell "OK"\n` +
            `${short(w.commits.trust)} ok: job ${short(w.keys.trust)}, exactly its 1 output(s), signed by ci-host; changes genjob-trust.json (this gate used ${short(w.commits.fix)}:genjob-trust.json)\n`,
        );
        // the script the generator made executable: executable in the receipt, the tree and the commit
        const receipt = JSON.parse(readFileSync(join(w.a, '.gen/receipts', `${w.keys.script}.json`), 'utf8'));
        const payload = JSON.parse(Buffer.from(receipt.payload, 'base64').toString('utf8'));
        expect(payload.outputs).toEqual([expect.objectContaining({ path: 'run.sh', executable: true })]);
        expect(statSync(join(w.a, 'run.sh')).mode & 0o777).toBe(0o755);
        expect(await git(w.a, ['ls-tree', w.commits.script, 'run.sh'], w.env)).toMatch(/^100755 blob /);
        expect(readFileSync(join(w.a, 'run.sh'), 'utf8')).toBe(
          '#!/bin/sh\necho "hi \u202e \u200b \u{e004f}\u{e004b}"\n',
        );
        // --json gives the count on the commit
        const json = JSON.parse(
          (await cli(w, b, ['verify', '--json', '--commits', 'origin/main..HEAD'])).stdout,
        );
        expect(
          json.commits.map((c: { hidden_added?: number; hidden_tags?: string[] }) => [
            c.hidden_added,
            c.hidden_tags,
          ]),
        ).toEqual([
          [undefined, undefined],
          [4, ['OK']],
          [undefined, undefined],
        ]);
      },
    );

    it('trust from the branch: a re-pinned ci-host does not vouch for the attacker’s receipt (EGJ_SIGNATURE_INVALID), nor pass --require-genjob (EGJ_COMMIT_POLICY_CHANGE)', async () => {
      // a same-repository attacker: may push branches and refs/genjob/, does not hold ci-host's key
      const bare = copyRemote(w, 'repin');
      const c = await clone(w, bare, 'c-repin');
      await git(c, ['checkout', '-q', '-b', 'repin'], w.env);
      const { repin, forged } = await forge(w, c);
      await git(c, ['push', '-q', 'origin', 'repin'], w.env);
      await ok(cli(w, c, ['push']));
      const b = await clone(w, bare, 'b-repin', { branch: 'repin' });
      const plain = await ci(w, b);
      expect(plain.exitCode).toBe(3);
      expect(plain.stdout).toBe(
        `${short(repin)} ok: no Genjob-Key; changes genjob-trust.json (this gate used ${short(w.commits.fix)}:genjob-trust.json)\n`,
      );
      expect(plain.stderr).toMatch(
        new RegExp(`^genjob: EGJ_SIGNATURE_INVALID: commit ${short(forged)}: receipt of job [0-9a-f]{12}: `),
      );
      const strict = await ci(w, b, PROTECT);
      expect(strict).toMatchObject({
        exitCode: 3,
        stdout: '',
        stderr: `genjob: EGJ_COMMIT_POLICY_CHANGE: commit ${short(repin)}: changes genjob-trust.json but has no Genjob-Key trailer; under --require-genjob a policy change passes only as a generated commit verified under the policy of the range's base\n`,
      });
      // the flags name the policy: a reviewed trust file, or a commit (here the branch itself, to show it is read)
      const reviewed = join(w.base, `reviewed-trust-${w.t.name.replace(/\W/g, '')}.json`);
      writeFileSync(reviewed, readFileSync(join(w.a, 'genjob-trust.json')));
      const byFile = await cli(w, b, ['verify', '--commits', 'origin/main..HEAD', '--trust-file', reviewed]);
      expect(byFile.stderr).toMatch(/^genjob: EGJ_SIGNATURE_INVALID: /);
      const byRef = await cli(w, b, ['verify', '--commits', 'origin/main..HEAD', '--trust-ref', 'HEAD']);
      expect(byRef.exitCode, byRef.stderr).toBe(0);
      expect(byRef.stdout).toContain(`${short(forged)} ok: job `);
      const noBase = await cli(w, b, ['verify', '--commits', 'HEAD --not origin/main']);
      expect(noBase.exitCode).toBe(2);
      expect(noBase.stderr).toMatch(
        /^genjob: EGJ_USAGE: --commits "HEAD --not origin\/main": the range has no single base/,
      );
    });

    fileOnly(
      'hostile: a tag named origin/main pushed with the branch, at its commit re-pinning ci-host, does not become the base: the short name is refused (EGJ_USAGE), the full name judges the forged commit (EGJ_SIGNATURE_INVALID)',
      async () => {
        const bare = copyRemote(w, 'tag-base');
        const c = await clone(w, bare, 'c-tag-base');
        await git(c, ['checkout', '-q', '-b', 'tagged'], w.env);
        const { repin, forged } = await forge(w, c);
        await git(c, ['push', '-q', 'origin', 'tagged'], w.env);
        await ok(cli(w, c, ['push']));
        // git reads refs/tags/origin/main before refs/remotes/origin/main, and a clone fetches tags
        await git(c, ['tag', 'origin/main', repin], w.env);
        await git(c, ['push', '-q', 'origin', 'refs/tags/origin/main'], w.env);
        const b = await clone(w, bare, 'b-tag-base', { branch: 'tagged' });
        expect(await git(b, ['rev-parse', '--verify', '-q', 'refs/tags/origin/main'], w.env)).toBe(repin);
        const refused = {
          exitCode: 2,
          stdout: '',
          stderr:
            'genjob: EGJ_USAGE: --commits: "origin/main" is ambiguous here: it could mean refs/tags/origin/main or refs/remotes/origin/main; write the one you mean in full (refs/…), or give a full commit id\n',
        };
        expect(await ci(w, b)).toMatchObject(refused);
        expect(await ci(w, b, PROTECT)).toMatchObject(refused);
        expect(
          await cli(w, b, [
            'verify',
            '--commits',
            'HEAD --not refs/remotes/origin/main',
            '--trust-ref',
            'origin/main',
          ]),
        ).toMatchObject({ exitCode: 2, stderr: refused.stderr.replace('--commits', '--trust-ref') });
        const full = await cli(w, b, ['verify', '--commits', 'refs/remotes/origin/main..HEAD']);
        expect(full.exitCode).toBe(3);
        expect(full.stderr).toMatch(
          new RegExp(
            `^genjob: EGJ_SIGNATURE_INVALID: commit ${short(forged)}: receipt of job [0-9a-f]{12}: `,
          ),
        );
        // a clone of the branch alone has no refs/remotes/origin/main, only the tag (it points into the branch)
        const single = join(w.base, `b-tag-single-${w.t.name.replace(/\W/g, '')}`);
        await git(w.base, ['clone', '-q', '--single-branch', '-b', 'tagged', w.t.url(bare), single], w.env);
        expect(await ci(w, single)).toMatchObject({
          exitCode: 2,
          stderr:
            'genjob: EGJ_USAGE: --commits: "origin/main" means refs/tags/origin/main here, not a branch of the remote origin (refs/remotes/origin/main is missing: fetch it); write the one you mean in full (refs/…), or give a full commit id\n',
        });
      },
    );

    it('the fork-PR shape: forged material committed under .gen/ with ci-host re-pinned is never read (EGJ_COMMIT_RECEIPT_MISSING, EGJ_COMMIT_GEN_DIR)', async () => {
      // a fork: the attacker pushes only a branch of its own repository; origin's refs/genjob/ is out of reach
      const fork = join(w.base, `fork-${w.t.name.replace(/\W/g, '')}.git`);
      await git(w.base, ['clone', '-q', '--bare', w.bare, fork], w.env);
      const c = await clone(w, w.bare, 'c-fork');
      await git(c, ['checkout', '-q', '-b', 'fork-pr'], w.env);
      const { repin, forged, key } = await forge(w, c);
      await git(c, ['add', '-f', '.gen/applied', '.gen/receipts', '.gen/out'], w.env);
      await git(c, ['commit', '-qm', 'add the receipts'], w.env);
      const shipped = await head(c, w);
      await git(c, ['push', '-q', w.t.url(fork), 'fork-pr'], w.env);
      const b = await clone(w, w.bare, 'b-fork', { fork: { bare: fork, branch: 'fork-pr' } });
      expect(existsSync(join(b, '.gen/receipts', `${key}.json`))).toBe(true);
      const plain = await ci(w, b);
      expect(plain.exitCode).toBe(3);
      expect(plain.stderr).toBe(
        `genjob: EGJ_COMMIT_RECEIPT_MISSING: commit ${short(forged)}: no receipt for job ${short(key)} here (run genjob pull first; a ref of it that pull skipped is named in pull's warnings)\n`,
      );
      const all = JSON.parse(
        (await cli(w, b, ['verify', '--commits', 'origin/main..HEAD', '--json'])).stdout,
      );
      expect(all.failures.map((f: { commit: string; code: string }) => [f.commit, f.code])).toEqual([
        [forged, 'EGJ_COMMIT_RECEIPT_MISSING'],
        [shipped, 'EGJ_COMMIT_GEN_DIR'],
      ]);
      const strict = await ci(w, b, PROTECT);
      expect(strict.stderr).toMatch(
        new RegExp(`^genjob: EGJ_COMMIT_POLICY_CHANGE: commit ${short(repin)}: `),
      );
    });

    fileOnly(
      'forged: a branch forked before a leaked key was rotated out does not get that key back through the merge base of A...B',
      async () => {
        // the attacker holds ci-host's private key; main rotates to ci-host-2 and removes ci-host
        const copy = copyRemote(w, 'rotated');
        const team = await clone(w, copy, 'team-rotated');
        const next = JSON.parse(
          (
            await ok(
              cli(w, w.base, [
                'keygen',
                '--json',
                '--out',
                join(team, '..', `host3-${w.t.name.replace(/\W/g, '')}.key`),
              ]),
            )
          ).stdout,
        ).publicKey;
        await ok(cli(w, team, ['trust', 'add', 'ci-host-2', next]));
        await ok(cli(w, team, ['trust', 'remove', 'ci-host']));
        await git(team, ['commit', '-qam', 'rotate ci-host out: its key leaked'], w.env);
        await git(team, ['push', '-q', 'origin', 'main'], w.env);
        // the attacker's branch starts before the rotation, its commit signed by the leaked key
        const c = await clone(w, copy, 'c-rotated');
        await git(c, ['checkout', '-q', '-b', 'leaked', w.commits.fix], w.env);
        const mint = await ok(cli(w, c, ['mint', '--json', '-m', 'Say hello in the README', 'README.md']));
        const key = JSON.parse(mint.stdout).key as string;
        await ok(
          cli(w, c, ['work', '--drain', '--quiet', '--generator', DEMO_GENERATOR], {
            GENJOB_SIGN_KEY: join(w.base, 'host.key'),
          }),
        );
        await ok(cli(w, c, ['apply', key, '--commit']));
        const leaked = await head(c, w);
        await git(c, ['push', '-q', 'origin', 'leaked'], w.env);
        await ok(cli(w, c, ['push']));
        const b = await clone(w, copy, 'b-rotated', { branch: 'leaked' });
        await ok(cli(w, b, ['pull']));
        // A..B judges by main as it is now: the leaked key is not pinned there
        const two = await cli(w, b, ['verify', '--commits', 'refs/remotes/origin/main..HEAD']);
        expect(two.stderr).toContain(`commit ${short(leaked)}`);
        expect(two.exitCode).toBe(3);
        // A...B took the merge base's policy alone, which the branch chose by where it forked
        const three = await cli(w, b, ['verify', '--commits', 'refs/remotes/origin/main...HEAD', '--json']);
        const doc = JSON.parse(three.stdout);
        expect(doc.failures.map((f: { commit: string }) => f.commit)).toContain(leaked);
        expect(doc.trust_policy).toContain('(keys both pin)');
        expect(three.exitCode).toBe(3);
      },
    );

    fileOnly(
      'a stale receipt replayed on newer history, undoing the security fix, fails naming the path (EGJ_COMMIT_STALE_BASE)',
      async () => {
        const fork = join(w.base, `fork-stale-${w.t.name.replace(/\W/g, '')}.git`);
        await git(w.base, ['clone', '-q', '--bare', w.bare, fork], w.env);
        const c = await clone(w, w.bare, 'c-stale');
        await git(c, ['checkout', '-q', '-b', 'replay'], w.env);
        await git(c, ['checkout', w.commits.timeout, '--', 'src/user.py', 'tests/test_user.py'], w.env);
        await git(c, ['commit', '-q', '-C', w.commits.timeout], w.env);
        const replayed = await head(c, w);
        expect(await git(c, ['diff-tree', '-r', '--name-only', '--no-commit-id', 'HEAD'], w.env)).toBe(
          'src/user.py',
        );
        await git(c, ['push', '-q', w.t.url(fork), 'replay'], w.env);
        const b = await clone(w, w.bare, 'b-stale', { fork: { bare: fork, branch: 'replay' } });
        const verify = await ci(w, b);
        expect(verify.exitCode).toBe(3);
        expect(verify.stderr).toMatch(
          new RegExp(
            `^genjob: EGJ_COMMIT_STALE_BASE: commit ${short(replayed)}: "src/user.py": the job was minted where it was sha256 [0-9a-f]{12}, the commit's parent has sha256 [0-9a-f]{12}; a receipt applies only on the history it was made for\\n$`,
          ),
        );
      },
    );

    fileOnly(
      'an evil merge editing a protected path fails under --require-genjob (EGJ_COMMIT_NOT_GENERATED); a clean merge passes',
      async () => {
        const fork = join(w.base, `fork-merge-${w.t.name.replace(/\W/g, '')}.git`);
        await git(w.base, ['clone', '-q', '--bare', w.bare, fork], w.env);
        const c = await clone(w, w.bare, 'c-merge');
        await git(c, ['checkout', '-q', '-b', 'clean'], w.env);
        writeFileSync(join(c, 'NOTES.md'), 'notes\n');
        await git(c, ['add', 'NOTES.md'], w.env);
        await git(c, ['commit', '-qm', 'notes'], w.env);
        await git(c, ['merge', '-q', '--no-ff', '-m', 'merge feature', 'origin/feature'], w.env);
        await git(c, ['checkout', '-q', '-b', 'evil', 'HEAD^1'], w.env);
        await git(c, ['merge', '-q', '--no-ff', '--no-commit', 'origin/feature'], w.env);
        writeFileSync(
          join(c, 'src/user.py'),
          `${readFileSync(join(c, 'src/user.py'), 'utf8')}import os; os.system("id")\n`,
        );
        await git(c, ['add', 'src/user.py'], w.env);
        await git(c, ['commit', '-qm', 'merge feature'], w.env);
        const evil = await head(c, w);
        await git(c, ['push', '-q', w.t.url(fork), 'clean', 'evil'], w.env);
        const passing =
          `${short(w.commits.readme)} ok: job ${short(w.keys.readme)}, exactly its 1 output(s), signed by ci-host\n` +
          `${short(w.commits.script)} ok: job ${short(w.keys.script)}, exactly its 1 output(s), signed by ci-host; warning: its outputs add 4 hidden character(s) (bidirectional controls or invisible code points), which can make code read differently from how it runs; tag characters new in its outputs spell "OK"\n`;
        const good = await clone(w, w.bare, 'b-clean', { fork: { bare: fork, branch: 'clean' } });
        const clean = await ci(w, good, PROTECT);
        expect(clean.exitCode, clean.stderr).toBe(0);
        expect(clean.stdout.slice(0, passing.length)).toBe(passing);
        const bad = await clone(w, w.bare, 'b-evil', { fork: { bare: fork, branch: 'evil' } });
        const verify = await ci(w, bad, PROTECT);
        expect(verify).toMatchObject({
          exitCode: 3,
          stderr: `genjob: EGJ_COMMIT_NOT_GENERATED: commit ${short(evil)}: beyond the automatic merge of its parents, it touches a path given to --require-genjob\n`,
        });
        // the commits that passed before the failure are printed, as in a passing run
        expect(verify.stdout.startsWith(passing)).toBe(true);
      },
    );

    fileOnly(
      'an output made executable behind its receipt’s back fails (EGJ_COMMIT_MODE_DIFFERS)',
      async () => {
        const fork = join(w.base, `fork-mode-${w.t.name.replace(/\W/g, '')}.git`);
        await git(w.base, ['clone', '-q', '--bare', w.bare, fork], w.env);
        const c = await clone(w, w.bare, 'c-mode');
        await git(c, ['checkout', '-q', '-b', 'modes'], w.env);
        await git(c, ['cherry-pick', '--allow-empty', w.commits.readme], w.env);
        await git(c, ['update-index', '--chmod=+x', 'README.md'], w.env);
        await git(c, ['commit', '-q', '--amend', '-C', 'HEAD'], w.env);
        const flipped = await head(c, w);
        await git(c, ['push', '-q', w.t.url(fork), 'modes'], w.env);
        const b = await clone(w, w.bare, 'b-mode', { fork: { bare: fork, branch: 'modes' } });
        expect(await ci(w, b)).toMatchObject({
          exitCode: 3,
          stderr: `genjob: EGJ_COMMIT_MODE_DIFFERS: commit ${short(flipped)}: output "README.md" has mode 100755 in the commit; its receipt leaves the mode as it was (100644)\n`,
        });
      },
    );

    it('a malformed ref under refs/genjob/ is skipped by pull (exit 0, named); only a gate needing that key fails', async () => {
      const bare = copyRemote(w, 'bad-ref');
      const c = await clone(w, bare, 'c-bad-ref');
      const blob = await git(c, ['hash-object', '-w', '--stdin'], w.env, 'not material');
      const key = 'e'.repeat(64);
      await git(
        c,
        ['push', '-q', 'origin', `${blob}:refs/genjob/keys/${key}`, 'HEAD:refs/genjob/keys/junk'],
        w.env,
      );
      await git(c, ['checkout', '-q', '-b', 'needs-bad'], w.env);
      writeFileSync(join(c, 'README.md'), 'claimed\n');
      await git(
        c,
        ['commit', '-qam', `claimed\n\nGenjob-Key: ${key}\nGenjob-Receipt: sha256:${'f'.repeat(64)}`],
        w.env,
      );
      const claimed = await head(c, w);
      await git(c, ['push', '-q', 'origin', 'needs-bad'], w.env);
      const b = await clone(w, bare, 'b-bad-ref', { branch: 'feature' });
      const pull = await cli(w, b, ['pull']);
      expect(pull).toMatchObject({
        exitCode: 0,
        stdout: '4 key(s) of verification material from origin, 2 ref(s) skipped\n',
        stderr:
          'genjob: warning: origin refs/genjob/keys/junk: the ref does not name one key (refs/genjob/keys/<64 hex>); skipped (a gate that needs this key fails)\n' +
          `genjob: warning: origin refs/genjob/keys/${key}: points at a blob, not a commit; skipped (a gate that needs this key fails)\n`,
      });
      expect((await cli(w, b, ['verify', '--commits', 'origin/main..HEAD'])).exitCode).toBe(0);
      await git(b, ['checkout', '-q', '-b', 'needs-bad', 'origin/needs-bad'], w.env);
      expect(await cli(w, b, ['verify', '--commits', 'origin/main..HEAD'])).toMatchObject({
        exitCode: 3,
        stderr: `genjob: EGJ_COMMIT_MATERIAL_INVALID: commit ${short(claimed)}: refs/genjob-pulled/keys/${key}: points at a blob, not a commit\n`,
      });
    });

    fileOnly(
      'pulled material never becomes the user’s jobs: apply --all --commit finds nothing, status lists nothing',
      async () => {
        const b = await clone(w, w.bare, 'b-user');
        const before = await head(b, w);
        await ok(cli(w, b, ['pull']));
        const status = JSON.parse((await ok(cli(w, b, ['status', '--json']))).stdout);
        expect(status.counts.received).toBe(0);
        const apply = await cli(w, b, ['apply', '--all', '--commit']);
        expect(apply).toMatchObject({ exitCode: 0, stdout: 'nothing to apply (no received jobs)\n' });
        expect(await head(b, w)).toBe(before);
      },
    );

    fileOnly('gc then pull brings no pruned, applied, committed job back', async () => {
      const a2 = join(w.base, `a-gc-${w.t.name.replace(/\W/g, '')}`);
      cpSync(w.a, a2, { recursive: true });
      const gc = await ok(cli(w, a2, ['gc', '--older-than', '0s', '--json']));
      expect(JSON.parse(gc.stdout).keys.length).toBe(4);
      await ok(cli(w, a2, ['pull']));
      const status = JSON.parse((await ok(cli(w, a2, ['status', '--json']))).stdout);
      expect(status.counts.received).toBe(0);
      const before = await head(a2, w);
      expect(await cli(w, a2, ['apply', '--all', '--commit'])).toMatchObject({ exitCode: 0 });
      expect(await head(a2, w)).toBe(before);
      // this clone's own gate still finds the material its commits need (its refs, not .gen/)
      const verify = await cli(w, a2, ['verify', '--commits', 'origin/main..HEAD', ...PROTECT]);
      expect(verify.exitCode, verify.stderr).toBe(0);
    });
  },
);
