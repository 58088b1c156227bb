// The merge gate against history that is not what the commits say: git's own ways of showing a commit
// other than the one a push sends or a merge takes. Each shape hides a forged generated commit (a
// Genjob-Key trailer with no receipt anywhere, which the gate must refuse) from a gate run through the
// built CLI over real git: a replace ref fetched from the remote, a shallow clone whose history ends
// inside the range. And the gate's own merge of a merge commit's parents: the branch's .gitattributes
// picks no merge driver for it, and nothing of it is left in the repository.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitEnv, worldCli } from './git-helpers.js';

interface World {
  base: string;
  env: Record<string, string>;
  bare: string;
  /** The team's clone: main pushed, then the attacker's branches pushed from it. */
  team: string;
  main: string;
}

const FORGED = `Genjob-Key: ${'a'.repeat(64)}\nGenjob-Receipt: sha256:${'b'.repeat(64)}`;

let w: World;
let n = 0;

beforeAll(async () => {
  const base = mkdtempSync(join(tmpdir(), 'gj-history-'));
  const env = gitEnv(base);
  const bare = join(base, 'origin.git');
  await git(base, ['init', '-q', '--bare', '-b', 'main', bare], env);
  const team = join(base, 'team');
  await git(base, ['init', '-q', '-b', 'main', team], env);
  writeFileSync(join(team, 'README.md'), 'hello\n');
  writeFileSync(join(team, 'f.txt'), 'a\nb\nc\n');
  await git(team, ['add', '-A'], env);
  await git(team, ['commit', '-qm', 'the repository'], env);
  await git(team, ['remote', 'add', 'origin', `file://${bare}`], env);
  await git(team, ['push', '-q', 'origin', 'main'], env);
  w = { base, env, bare, team, main: await git(team, ['rev-parse', 'HEAD'], env) };
});
afterAll(() => {
  if (w) rmSync(w.base, { recursive: true, force: true });
});

const cli = (cwd: string, args: readonly string[]) => worldCli(w, cwd, args);

/** On a new branch `name` off main in the team's clone: a forged generated commit (edits README.md). */
async function forgedBranch(name: string): Promise<string> {
  await git(w.team, ['checkout', '-q', '-b', name, w.main], w.env);
  writeFileSync(join(w.team, 'README.md'), `forged ${name}\n`);
  await git(w.team, ['commit', '-qam', `forged\n\n${FORGED}`], w.env);
  return git(w.team, ['rev-parse', 'HEAD'], w.env);
}

/** A fresh clone of the remote with `branch` checked out (`args`: extra clone options). */
async function ciClone(branch: string, args: readonly string[] = []): Promise<string> {
  const dir = join(w.base, `ci-${++n}`);
  await git(w.base, ['clone', '-q', '--no-single-branch', ...args, `file://${w.bare}`, dir], w.env);
  await git(dir, ['checkout', '-q', branch], w.env);
  return dir;
}

/** Every file under `dir` with its bytes' digest: what "left as it was" is checked against. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(p, `${statSync(p).mode} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`);
    }
  };
  walk(dir);
  return out;
}

describe('the merge gate against forged history', () => {
  it('forged: a replace ref fetched with the branch does not make a forged commit read as a person’s', async () => {
    const forged = await forgedBranch('replaced');
    // the same change as a person's commit, standing in for the forged one by refs/replace/<forged>
    const innocent = await git(
      w.team,
      ['commit-tree', `${forged}^{tree}`, '-p', w.main, '-m', 'a person’s edit'],
      w.env,
    );
    await git(w.team, ['replace', forged, innocent], w.env);
    await git(w.team, ['push', '-q', 'origin', 'replaced', 'refs/replace/*:refs/replace/*'], w.env);
    await git(w.team, ['replace', '-d', forged], w.env);
    const ci = await ciClone('replaced');
    // a CI that mirrors every ref of the remote has the replace ref, and git honours it by default
    await git(ci, ['fetch', '-q', 'origin', 'refs/replace/*:refs/replace/*'], w.env);
    expect(await git(ci, ['log', '-1', '--format=%H %s', 'HEAD'], w.env)).toBe(`${forged} a person’s edit`);
    const r = await cli(ci, ['verify', '--commits', 'refs/remotes/origin/main..HEAD']);
    expect(r.stderr).toContain(`EGJ_COMMIT_RECEIPT_MISSING: commit ${forged.slice(0, 12)}`);
    expect(r.exitCode).toBe(3);
  });

  it('forged: a shallow clone whose history ends inside the range is refused, not judged on the commits it has', async () => {
    const forged = await forgedBranch('cut');
    writeFileSync(join(w.team, 'f.txt'), 'a\nb\nc\nd\n');
    await git(w.team, ['commit', '-qam', 'a person’s commit on top'], w.env);
    await git(w.team, ['push', '-q', 'origin', 'cut'], w.env);
    // CI fetching the last commit of each branch: the forged one, below it, is not here
    const ci = await ciClone('cut', ['--depth', '1']);
    expect(await git(ci, ['rev-list', '--count', 'HEAD'], w.env)).toBe('1');
    const r = await cli(ci, ['verify', '--commits', 'refs/remotes/origin/main..HEAD']);
    expect(r.stderr).toMatch(/EGJ_USAGE: .*this clone is shallow/);
    expect(r.exitCode).toBe(2);
    // with the history fetched, the forged commit is there to be judged
    await git(ci, ['fetch', '-q', '--unshallow', 'origin'], w.env);
    const full = await cli(ci, ['verify', '--commits', 'refs/remotes/origin/main..HEAD']);
    expect(full.stderr).toContain(`EGJ_COMMIT_RECEIPT_MISSING: commit ${forged.slice(0, 12)}`);
    expect(full.exitCode).toBe(3);
  });

  it('hostile: the branch’s .gitattributes (merge=union) does not make a conflict resolved by hand look automatic, and the gate leaves .git as it was', async () => {
    // accepted history: main and side each change line 2 of f.txt
    await git(w.team, ['checkout', '-q', '-b', 'side', w.main], w.env);
    writeFileSync(join(w.team, 'f.txt'), 'a\nSIDE\nc\n');
    await git(w.team, ['commit', '-qam', 'side'], w.env);
    await git(w.team, ['checkout', '-q', '-b', 'ahead', w.main], w.env);
    writeFileSync(join(w.team, 'f.txt'), 'a\nMAIN\nc\n');
    await git(w.team, ['commit', '-qam', 'main moves on'], w.env);
    await git(w.team, ['checkout', '-q', '-b', 'moved'], w.env);
    // the branch: attributes that resolve every conflict by taking both sides, then the merge
    writeFileSync(join(w.team, '.gitattributes'), '* merge=union\n');
    await git(w.team, ['add', '.gitattributes'], w.env);
    await git(w.team, ['commit', '-qm', 'attributes'], w.env);
    await git(w.team, ['merge', '-q', '--no-ff', '-m', 'merge side', 'side'], w.env);
    expect(readFileSync(join(w.team, 'f.txt'), 'utf8')).toBe('a\nMAIN\nSIDE\nc\n');
    const merge = await git(w.team, ['rev-parse', 'HEAD'], w.env);
    await git(w.team, ['push', '-q', 'origin', 'side', 'ahead', 'moved'], w.env);
    const ci = await ciClone('moved');
    const before = snapshot(join(ci, '.git'));
    const tmp = join(w.base, 'tmp');
    mkdirSync(tmp);
    const r = await worldCli(
      w,
      ci,
      [
        'verify',
        '--commits',
        'HEAD --not refs/remotes/origin/side refs/remotes/origin/ahead',
        '--trust-ref',
        'refs/remotes/origin/ahead',
        '--require-genjob',
        'f.txt',
      ],
      { TMPDIR: tmp },
    );
    expect(r.stderr).toContain(
      `EGJ_COMMIT_NOT_GENERATED: commit ${merge.slice(0, 12)}: beyond the automatic merge of its parents`,
    );
    expect(r.exitCode).toBe(3);
    // no object of the gate's own merge in the repository, and its scratch store gone
    expect(snapshot(join(ci, '.git'))).toEqual(before);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('forged: genjob state committed as .GEN/ (what a case-insensitive checkout writes into .gen/) fails as .gen/ does', async () => {
    await git(w.team, ['checkout', '-q', '-b', 'gen-alias', w.main], w.env);
    mkdirSync(join(w.team, '.GEN', 'receipts'), { recursive: true });
    writeFileSync(join(w.team, '.GEN', 'receipts', `${'a'.repeat(64)}.json`), '{}\n');
    // a path spelled as a commit id beside it is a path, never read as the next commit of the walk
    writeFileSync(join(w.team, w.main), 'x\n');
    await git(w.team, ['add', '-f', '.GEN', w.main], w.env);
    await git(w.team, ['commit', '-qm', 'ship some state'], w.env);
    const shipped = await git(w.team, ['rev-parse', 'HEAD'], w.env);
    await git(w.team, ['push', '-q', 'origin', 'gen-alias'], w.env);
    const ci = await ciClone('gen-alias');
    const r = await cli(ci, ['verify', '--commits', 'refs/remotes/origin/main..HEAD']);
    expect(r.stderr).toContain(`EGJ_COMMIT_GEN_DIR: commit ${shipped.slice(0, 12)}`);
    expect(r.exitCode).toBe(3);
  });

  it('forged: a person’s Genjob-Trust.json (the trust file, on a case-insensitive checkout) is a policy change', async () => {
    await git(w.team, ['checkout', '-q', '-b', 'trust-alias', w.main], w.env);
    writeFileSync(join(w.team, 'Genjob-Trust.json'), '{"schema":"genjob/trust@1","keys":[]}\n');
    await git(w.team, ['add', 'Genjob-Trust.json'], w.env);
    await git(w.team, ['commit', '-qm', 'tidy'], w.env);
    const repin = await git(w.team, ['rev-parse', 'HEAD'], w.env);
    await git(w.team, ['push', '-q', 'origin', 'trust-alias'], w.env);
    const ci = await ciClone('trust-alias');
    const seen = await cli(ci, ['verify', '--commits', 'refs/remotes/origin/main..HEAD']);
    expect(seen.stdout).toContain(`${repin.slice(0, 12)} ok: no Genjob-Key; changes genjob-trust.json`);
    const r = await cli(ci, [
      'verify',
      '--commits',
      'refs/remotes/origin/main..HEAD',
      '--require-genjob',
      'src/',
    ]);
    expect(r.stderr).toContain(`EGJ_COMMIT_POLICY_CHANGE: commit ${repin.slice(0, 12)}`);
    expect(r.exitCode).toBe(3);
  });
});
