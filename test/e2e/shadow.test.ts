// Shadow planes end to end: work --shadow runs existing jobs again without touching live state;
// a shadow receipt copied by hand into the live directories is refused by verify and apply
// (EGJ_SHADOW); compare reports per job; promote goes through the live path.
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/store/journal.js';
import { Store } from '../../src/store/store.js';
import { genDir, makeSandbox, mintKey, readJson, type Sandbox, snapshot } from './helpers.js';

/** A generator that appends `line` to every job input it finds in the workspace. */
function appender(sb: Sandbox, name: string, line: string): string {
  return sb.script(
    name,
    `for f in src/user.py tests/test_user.py README.md; do [ -f "$f" ] && echo '${line}' >> "$f"; done; exit 0`,
  );
}

/** Every live file of .gen/ (all but shadow/, tmp/, locks/ and the journal), byte for byte. */
function liveState(sb: Sandbox) {
  return snapshot(join(sb.repo, '.gen'), [
    'shadow',
    'tmp',
    'locks',
    'journal.jsonl',
    'journal.1.jsonl',
    'journal.d',
  ]);
}

async function threeJobs(sb: Sandbox): Promise<string[]> {
  return [
    await mintKey(sb, 'one', ['src/user.py']),
    await mintKey(sb, 'two', ['tests/test_user.py']),
    await mintKey(sb, 'three', ['README.md']),
  ];
}

describe('genjob work --shadow', () => {
  it('runs queued, received and applied jobs again under .gen/shadow/NAME/ and leaves every live file as it was', async () => {
    const sb = await makeSandbox();
    const live = appender(sb, 'live.sh', '# live');
    const [k1, k2, k3] = await threeJobs(sb);
    // k1 applied, k2 received, k3 still queued
    expect((await sb.genjob(['work', '--once', '--generator', live])).exitCode).toBe(0);
    expect((await sb.genjob(['work', '--once', '--generator', live])).exitCode).toBe(0);
    const first = genDir(sb, 'received').map((n) => n.slice(0, -5));
    expect((await sb.genjob(['apply', first[0]!])).exitCode).toBe(0);
    const before = liveState(sb);
    const tree = snapshot(sb.repo);

    const r = await sb.genjob([
      'work',
      '--shadow',
      'b',
      '--all',
      '--json',
      '--generator',
      appender(sb, 'b.sh', '# shadow b'),
    ]);
    expect(r.exitCode).toBe(0);
    const outcomes = (JSON.parse(r.stdout) as { outcomes: Array<{ key: string; outcome: string }> }).outcomes;
    expect(outcomes.map((o) => o.outcome)).toEqual(['stored', 'stored', 'stored']);
    expect(new Set(outcomes.map((o) => o.key))).toEqual(new Set([k1, k2, k3]));
    expect(liveState(sb)).toEqual(before);
    expect(snapshot(sb.repo)).toEqual(tree);
    for (const k of [k1!, k2!, k3!]) {
      const receipt = readJson(join(sb.repo, '.gen', 'shadow', 'b', 'results', k, 'receipt.json'));
      expect(receipt.plane).toBe('shadow:b');
    }
    // a live receipt names its plane too, inside what is hashed
    const liveReceipt = readJson(join(sb.repo, '.gen', 'receipts', `${first[0]}.json`));
    expect(liveReceipt.plane).toBe('live');
    // the queued job stays queued: a live worker takes it as if nothing happened
    expect(genDir(sb, 'queue')).toHaveLength(1);
  });

  it('refuses a shadow receipt copied by hand into received/ (verify and apply exit 3, EGJ_SHADOW) and a live receipt edited to name a shadow plane', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'one', ['src/user.py']);
    expect(
      (
        await sb.genjob([
          'work',
          '--shadow',
          'b',
          key.slice(0, 8),
          '--generator',
          appender(sb, 'b.sh', '# b'),
        ])
      ).exitCode,
    ).toBe(0);
    const gen = join(sb.repo, '.gen');
    const shadow = join(gen, 'shadow', 'b', 'results', key);
    // by hand: the job into received/, the shadow receipt and bytes beside it
    cpSync(join(gen, 'queue', `${key}.json`), join(gen, 'received', `${key}.json`));
    rmSync(join(gen, 'queue', `${key}.json`));
    cpSync(join(shadow, 'receipt.json'), join(gen, 'receipts', `${key}.json`));
    cpSync(join(shadow, 'files'), join(gen, 'out', key), { recursive: true });
    const tree = snapshot(sb.repo);
    for (const cmd of ['verify', 'apply']) {
      const r = await sb.genjob([cmd, key]);
      expect(r.exitCode).toBe(3);
      expect(r.stderr).toMatch(
        /^genjob: EGJ_SHADOW: .*receipts\/[0-9a-f]{64}\.json: receipt is of plane "shadow:b"/,
      );
    }
    expect(snapshot(sb.repo)).toEqual(tree);
    // a live-looking receipt (plain JSON) whose payload names a shadow plane
    const doc = readJson(join(gen, 'receipts', `${key}.json`));
    writeFileSync(join(gen, 'receipts', `${key}.json`), JSON.stringify({ ...doc, plane: 'shadow:other' }));
    const r = await sb.genjob(['verify', key]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('EGJ_SHADOW');
  });

  it('exits 2 for --shadow with --drain, with neither keys nor --all, and for a bad plane name', async () => {
    const sb = await makeSandbox();
    for (const args of [
      ['work', '--shadow', 'b', '--drain'],
      ['work', '--shadow', 'b'],
      ['work', '--shadow', '../x', '--all'],
      ['work', '--drain', '--all'],
      ['work', '--shadow', 'b', '--all', '--run', 'r'],
      ['work', '--shadow', 'b', '--run', 'r', 'abcd'],
    ]) {
      const r = await sb.genjob([...args, '--generator', 'true']);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(/^genjob: EGJ_(USAGE|BAD_SHADOW_NAME): /);
    }
  });

  it("--run NAME sends the run's jobs only, never another job's files (--run was ignored beside --all)", async () => {
    const sb = await makeSandbox();
    await execa('git', ['add', '-A'], { cwd: sb.repo }); // --each takes the files git tracks
    const minted = await sb.genjob([
      'mint',
      '--each',
      'src/user.py',
      '-m',
      'Edit {path}',
      '--run',
      'r',
      '--json',
    ]);
    expect(minted.exitCode, minted.stderr).toBe(0);
    const keys = JSON.parse(minted.stdout).jobs.map((j: { key: string }) => j.key);
    const other = await mintKey(sb, 'unrelated', ['README.md']);
    const gen = appender(sb, 'g', '# p');
    const r = await sb.genjob(['work', '--shadow', 'p', '--run', 'r', '--json', '--generator', gen]);
    expect(r.exitCode, r.stderr).toBe(0);
    const results = readdirSync(join(sb.repo, '.gen', 'shadow', 'p', 'results'));
    expect(results).toEqual(keys);
    expect(results).not.toContain(other);
  });
});

describe('genjob compare', () => {
  it('reports identical, differs and missing per job with totals, agreement and tokens, live vs shadow and shadow vs shadow', async () => {
    const sb = await makeSandbox();
    const [k1, k2, k3] = await threeJobs(sb);
    expect(
      (await sb.genjob(['work', '--drain', '--generator', appender(sb, 'live.sh', '# live')])).exitCode,
    ).toBe(0);
    // plane "same" answers like live; plane "other" differs; neither has run k3
    expect(
      (
        await sb.genjob([
          'work',
          '--shadow',
          'same',
          k1!,
          k2!,
          '--generator',
          appender(sb, 'same.sh', '# live'),
        ])
      ).exitCode,
    ).toBe(0);
    expect(
      (
        await sb.genjob([
          'work',
          '--shadow',
          'other',
          k1!,
          k2!,
          '--generator',
          appender(sb, 'o.sh', '# other\n# more'),
        ])
      ).exitCode,
    ).toBe(0);

    const r = await sb.genjob(['compare', '--shadow', 'same', '--json']);
    expect(r.exitCode).toBe(0);
    const c = JSON.parse(r.stdout);
    expect(c.a).toBe('live');
    expect(c.b).toBe('shadow:same');
    expect(c.totals).toEqual({
      jobs: 3,
      both: 2,
      identical: 2,
      differs: 0,
      aborted: 0,
      rejected: 0,
      missing: 1,
    });
    expect(c.agreement).toBe(1);
    expect(c.jobs.find((j: { key: string }) => j.key === k3).verdict).toBe('missing');

    const d = JSON.parse(
      (await sb.genjob(['compare', '--shadow', 'same', '--shadow', 'other', '--json'])).stdout,
    );
    expect(d.totals.differs).toBe(2);
    expect(d.agreement).toBe(0);
    const one = d.jobs.find((j: { key: string }) => j.key === k1);
    expect(one).toMatchObject({ verdict: 'differs', added: 2, removed: 1 });

    // a plane never worked (a typo) is refused, naming the planes there are
    const typo = await sb.genjob(['compare', '--shadow', 'same', '--shadow', 'othre']);
    expect(typo.exitCode).toBe(2);
    expect(typo.stderr).toBe(
      `genjob: EGJ_USAGE: --shadow othre: no such shadow plane in ${join(sb.repo, '.gen')}/shadow/ (there are: other, same)\n`,
    );

    const human = await sb.genjob(['compare', '--shadow', 'other', k1!.slice(0, 10)]);
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toContain('1 job(s): 0 identical, 1 differ');
    expect(human.stdout).toContain('agreement: 0.0% (0 of 1 answered on both sides)');
    expect(human.stdout).toMatch(/tokens live: 0 .* over 1 answer\(s\)/);

    // --diff: what each side wrote, as a unified diff from the first side to the second
    const diff = await sb.genjob(['compare', '--shadow', 'same', '--shadow', 'other', '--diff', k1!]);
    expect(diff.exitCode).toBe(0);
    const tail = diff.stdout.slice(diff.stdout.indexOf('\ndiff of '));
    expect(tail).toMatch(
      new RegExp(
        `^\\ndiff of ${k1!.slice(0, 12)} \\(shadow:same → shadow:other\\):\\n--- shadow:same/src/user\\.py\\n\\+\\+\\+ shadow:other/src/user\\.py\\n@@ [^\\n]+\\n`,
      ),
    );
    expect(tail).toContain('\n-# live\n+# other\n+# more\n');
    const json = JSON.parse(
      (await sb.genjob(['compare', '--shadow', 'other', '--diff', '--json', k1!, k3!])).stdout,
    );
    const byKey = Object.fromEntries(json.jobs.map((j: { key: string }) => [j.key, j]));
    expect(byKey[k1!].diff).toContain('--- live/src/user.py\n+++ shadow:other/src/user.py\n');
    expect(byKey[k3!]).not.toHaveProperty('diff'); // missing on one side: nothing to diff
  });
});

describe('genjob promote', () => {
  it('requeues the job live with the shadow generator; work makes a new live epoch that verifies and applies; the journal records it', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'one', ['src/user.py']);
    expect(
      (await sb.genjob(['work', '--once', '--generator', appender(sb, 'live.sh', '# live')])).exitCode,
    ).toBe(0);
    const shadowGen = appender(sb, 'b.sh', '# promoted');
    expect((await sb.genjob(['work', '--shadow', 'b', key, '--generator', shadowGen])).exitCode).toBe(0);

    const p = await sb.genjob(['promote', '--shadow', 'b', key.slice(0, 8), '--json']);
    expect(p.exitCode).toBe(0);
    expect(JSON.parse(p.stdout)).toMatchObject({
      key,
      plane: 'shadow:b',
      generator: shadowGen,
      from_state: 'received',
    });
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'receipts')).toEqual([]);
    // no --generator: the pin decides
    expect((await sb.genjob(['work', '--once'])).exitCode).toBe(0);
    const receipt = readJson(join(sb.repo, '.gen', 'receipts', `${key}.json`));
    expect(receipt).toMatchObject({ plane: 'live', epoch: 2, generator: { command: shadowGen } });
    expect((await sb.genjob(['verify', key])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, 'src/user.py'), 'utf8')).toMatch(/# promoted\n$/);
    expect(readJournal(new Store(sb.repo)).map((e) => e.event)).toContain('promoted');
    // an applied job cannot be promoted
    const again = await sb.genjob(['promote', '--shadow', 'b', key]);
    expect(again.exitCode).toBe(4);
    expect(again.stderr).toContain('EGJ_NOT_PROMOTABLE');
  });

  it('refuses to promote a plane without an answer for the key (exit 3) and leaves the live job alone', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'one', ['src/user.py']);
    const other = await mintKey(sb, 'two', ['README.md']);
    // plane b answered the other job only
    const gen = appender(sb, 'b.sh', '# b');
    expect((await sb.genjob(['work', '--shadow', 'b', other, '--generator', gen])).exitCode).toBe(0);
    const before = liveState(sb);
    const r = await sb.genjob(['promote', '--shadow', 'b', key]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('EGJ_RECEIPT_MISSING');
    expect(liveState(sb)).toEqual(before);
  });

  it('refuses a plane no work --shadow ran (a typo) as compare does: bad usage naming the planes there are', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'one', ['src/user.py']);
    const none = await sb.genjob(['promote', '--shadow', 'nope', key]);
    expect(none).toMatchObject({
      exitCode: 2,
      stderr: `genjob: EGJ_USAGE: --shadow nope: no such shadow plane in ${join(sb.repo, '.gen')}/shadow/ (there is none yet: run genjob work --shadow NAME first)\n`,
    });
    expect(
      (await sb.genjob(['work', '--shadow', 'b', key, '--generator', appender(sb, 'b.sh', '# b')])).exitCode,
    ).toBe(0);
    const before = liveState(sb);
    for (const command of [
      ['promote', '--shadow', 'nope', key],
      ['compare', '--shadow', 'nope'],
    ]) {
      const r = await sb.genjob(command);
      expect(r).toMatchObject({
        exitCode: 2,
        stderr: `genjob: EGJ_USAGE: --shadow nope: no such shadow plane in ${join(sb.repo, '.gen')}/shadow/ (there are: b)\n`,
      });
    }
    expect(liveState(sb)).toEqual(before);
  });
});
