// Retention end to end: gc prunes finished jobs past the window and leaves tombstones; a pruned
// applied key is never minted (so never generated) again; show and revert explain; queued and
// received jobs and the journal events of live jobs survive; the host's cache prune.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURE, genDir, makeSandbox, mintKey, type Sandbox, snapshot } from './helpers.js';

function liveGen(sb: Sandbox): string {
  return sb.script(
    'live.sh',
    `for f in src/user.py tests/test_user.py README.md; do [ -f "$f" ] && echo '# live' >> "$f"; done; exit 0`,
  );
}

describe('genjob gc', () => {
  it('prunes applied and dropped jobs past the window with a tombstone each, and never a received one', async () => {
    const sb = await makeSandbox();
    const gen = liveGen(sb);
    const k1 = await mintKey(sb, 'applied one', ['src/user.py']);
    const k2 = await mintKey(sb, 'received one', ['README.md']);
    const k3 = await mintKey(sb, 'dropped one', ['tests/test_user.py']);
    expect((await sb.genjob(['work', '--drain', '--generator', gen])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', k1])).exitCode).toBe(0);
    expect((await sb.genjob(['drop', k3])).exitCode).toBe(0);

    // the default window (30d) keeps a job applied a moment ago
    const kept = await sb.genjob(['gc', '--json']);
    expect(kept.exitCode).toBe(0);
    expect(JSON.parse(kept.stdout).keys).toEqual([]);
    expect(genDir(sb, 'applied')).toEqual([`${k1}.json`]);

    expect((await sb.genjob(['status'])).stdout).not.toContain('genjob gc would free');
    const status = await sb.genjob(['status', '--disk']);
    expect(status.stdout).toMatch(
      /\n\.gen\/ [\d.]+ (B|KiB); genjob gc would free 0 B \(finished before \d{4}-\d\d-\d\d\)\n/,
    );

    const before = snapshot(join(sb.repo, '.gen'), ['locks', 'journal.jsonl', 'journal.d']);
    const dry = await sb.genjob(['gc', '--older-than', '0s', '--dry-run', '--json']);
    expect(dry.exitCode).toBe(0);
    const plan = JSON.parse(dry.stdout) as { keys: Array<{ key: string; state: string }>; bytes: number };
    expect(plan.keys.map((k) => [k.key, k.state]).sort()).toEqual(
      [
        [k1, 'applied'],
        [k3, 'dropped'],
      ].sort(),
    );
    expect(plan.bytes).toBeGreaterThan(0);
    expect(snapshot(join(sb.repo, '.gen'), ['locks', 'journal.jsonl', 'journal.d'])).toEqual(before);

    const r = await sb.genjob(['gc', '--older-than', '0s']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('2 key(s) finished before');
    expect(genDir(sb, 'tombstones')).toEqual([`${k1}.json`, `${k3}.json`].sort());
    expect(genDir(sb, 'applied')).toEqual([]);
    expect(genDir(sb, 'out')).toEqual([k2]);
    expect(genDir(sb, 'receipts')).toEqual([`${k2}.json`]);
    expect(genDir(sb, 'objects')).toEqual([]);
    expect(genDir(sb, 'dead')).toEqual([]);
    // the received job is whole: it verifies and its journal events are still there
    expect((await sb.genjob(['verify', k2])).exitCode).toBe(0);
    const shown = JSON.parse((await sb.genjob(['show', k2, '--json'])).stdout) as {
      journal: Array<{ event: string }>;
    };
    expect(shown.journal.map((e) => e.event)).toEqual(
      expect.arrayContaining(['minted', 'attempt', 'received']),
    );
    expect(existsSync(join(sb.repo, '.gen', 'journal.1.jsonl'))).toBe(true);

    // show and revert of the pruned key say what happened
    const show = await sb.genjob(['show', k1.slice(0, 10)]);
    expect(show.exitCode).toBe(0);
    expect(show.stdout).toMatch(/\ntombstone: applied at \S+, pruned on \S+\n/);
    expect(show.stdout).toMatch(/\nstate {5}pruned by gc \(was applied\)\n/);
    const revert = await sb.genjob(['revert', k1]);
    expect(revert.exitCode).toBe(2);
    expect(revert.stderr).toMatch(
      /^genjob: EGJ_PRUNED: .*was applied and its material pruned by genjob gc on \d{4}-\d\d-\d\d/,
    );

    // the same work order again: already applied, nothing queued, nothing generated
    copyFileSync(join(FIXTURE, 'src/user.py'), join(sb.repo, 'src/user.py'));
    const again = await sb.genjob(['mint', '-m', 'applied one', 'src/user.py']);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toBe(`${k1}\n`);
    expect(again.stderr).toMatch(/^already applied \(pruned on \d{4}-\d\d-\d\d\)\n$/);
    expect(genDir(sb, 'queue')).toEqual([]);
    // a dropped key may be minted afresh
    const dropped = await sb.genjob(['mint', '--json', '-m', 'dropped one', 'tests/test_user.py']);
    expect(JSON.parse(dropped.stdout)).toMatchObject({ key: k3, minted: true });
  });

  it('says what became of a pruned key: verify and check EGJ_PRUNED, apply already applied, retry and cancel name it; never "unknown"', async () => {
    const sb = await makeSandbox();
    writeFileSync(join(sb.repo, 'genjob.config.json'), JSON.stringify({ checkers: { t: { run: 'true' } } }));
    const applied = await mintKey(sb, 'applied one', ['src/user.py']);
    const dropped = await mintKey(sb, 'dropped one', ['tests/test_user.py']);
    expect((await sb.genjob(['work', '--drain', '--generator', liveGen(sb)])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', applied])).exitCode).toBe(0);
    expect((await sb.genjob(['drop', dropped])).exitCode).toBe(0);
    expect((await sb.genjob(['gc', '--older-than', '0s'])).exitCode).toBe(0);
    const day = String.raw`\d{4}-\d\d-\d\d`;
    const tree = snapshot(sb.repo);

    for (const [key, ended, afresh] of [
      [applied, 'applied', ''],
      [dropped, 'dropped', String.raw` \(mint the same work order to generate it afresh\)`],
    ] as const) {
      const pruned = `key ${key.slice(0, 12)} was ${ended}, then pruned by genjob gc on ${day}: its receipt and outputs are gone, nothing to verify${afresh}`;
      const v = await sb.genjob(['verify', key.slice(0, 8)]);
      expect([v.exitCode, v.stderr]).toEqual([
        2,
        expect.stringMatching(new RegExp(`^genjob: EGJ_PRUNED: \\S+/tombstones/${key}\\.json: ${pruned}\n$`)),
      ]);
      const c = await sb.genjob(['check', key]);
      expect([c.exitCode, c.stdout]).toEqual([
        2,
        expect.stringContaining(`${key.slice(0, 12)}  *     not checked (EGJ_PRUNED)`),
      ]);
      expect(c.stderr).toMatch(new RegExp(pruned));
      const r = await sb.genjob(['retry', key]);
      expect([r.exitCode, r.stderr]).toEqual([
        4,
        expect.stringMatching(
          new RegExp(`\\(this one is ${ended}, then pruned by genjob gc on ${day}\\)\n$`),
        ),
      ]);
      const x = await sb.genjob(['cancel', key]);
      expect(x.stderr).toMatch(new RegExp(`\\(this one is ${ended}, then pruned by genjob gc on ${day}\\)`));
    }
    // apply of the applied one: applied all the same (as mint of its work order says), nothing written
    const a = await sb.genjob(['apply', applied, '--json']);
    expect(a.exitCode, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout).results).toEqual([
      { key: applied, status: 'already-applied', pruned_on: expect.stringMatching(new RegExp(`^${day}$`)) },
    ]);
    expect((await sb.genjob(['apply', applied])).stdout).toMatch(
      new RegExp(`^${applied.slice(0, 12)} already applied \\(pruned on ${day}\\)\n$`),
    );
    // the dropped one was never applied: apply refuses it by what became of it
    const d = await sb.genjob(['apply', dropped]);
    expect([d.exitCode, d.stderr]).toEqual([2, expect.stringContaining('EGJ_PRUNED')]);
    expect(snapshot(sb.repo)).toEqual(tree);
  });

  it('a forged tombstone (a branch may commit .gen/) writes nothing and stands in for no live job', async () => {
    const sb = await makeSandbox();
    const queued = await mintKey(sb, 'queued one', ['src/user.py']);
    const stranger = 'ab'.repeat(32);
    mkdirSync(join(sb.repo, '.gen', 'tombstones'), { recursive: true });
    for (const key of [queued, stranger])
      writeFileSync(
        join(sb.repo, '.gen', 'tombstones', `${key}.json`),
        JSON.stringify({
          schema: 'genjob/tombstone@1',
          key,
          state: 'applied',
          finished_at: null,
          job_digest: null,
          receipt_sha256: null,
          pruned: [],
          pruned_at: '2026-01-01T00:00:00.000Z',
        }),
      );
    const tree = snapshot(sb.repo);
    // a key with no job at all: verify refuses it, apply writes nothing (its "already applied" is a claim
    // about this store, as mint's of a pruned work order is, never a write)
    expect((await sb.genjob(['verify', stranger])).stderr).toMatch(/^genjob: EGJ_PRUNED: /);
    const a = await sb.genjob(['apply', stranger]);
    expect([a.exitCode, a.stdout]).toEqual([
      0,
      `${stranger.slice(0, 12)} already applied (pruned on 2026-01-01)\n`,
    ]);
    // a live job is what it is, whatever tombstone lies beside it
    const v = await sb.genjob(['verify', queued]);
    expect([v.exitCode, v.stderr]).toEqual([2, expect.stringContaining('EGJ_NOT_RECEIVED')]);
    const q = await sb.genjob(['apply', queued]);
    expect([q.exitCode, q.stderr]).toEqual([2, expect.stringContaining('EGJ_NOT_RECEIVED')]);
    expect(genDir(sb, 'queue')).toEqual([`${queued}.json`]);
    expect(snapshot(sb.repo)).toEqual(tree);
  });

  it('refuses to verify an applied key whose pruning a gc left half done (EGJ_PRUNED), apply leaves it applied, and the next gc finishes it', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'applied one', ['src/user.py']);
    expect((await sb.genjob(['work', '--once', '--generator', liveGen(sb)])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    const tree = snapshot(sb.repo, ['.gen']);
    // gc writes the tombstone, then removes out/, the receipt, the backups and, last, the apply record:
    // a gc stopped before its last step leaves the record (put back here by hand) and nothing else
    const record = join(sb.repo, '.gen', 'applied', `${key}.json`);
    const saved = join(sb.base, 'applied-record.json');
    copyFileSync(record, saved);
    expect((await sb.genjob(['gc', '--older-than', '0s'])).exitCode).toBe(0);
    copyFileSync(saved, record);
    const v = await sb.genjob(['verify', key]);
    expect(v.exitCode, v.stdout + v.stderr).toBe(2);
    expect(v.stderr).toMatch(
      /^genjob: EGJ_PRUNED: .*genjob gc began pruning its material on \d{4}-\d\d-\d\d; nothing to verify \(run genjob gc to finish\)/,
    );
    // apply knows it from the apply record alone: already applied, nothing written
    const a = await sb.genjob(['apply', key]);
    expect(a.exitCode, a.stderr).toBe(0);
    expect(a.stdout).toContain('already applied');
    expect(snapshot(sb.repo, ['.gen'])).toEqual(tree);
    expect((await sb.genjob(['gc', '--older-than', '0s'])).exitCode).toBe(0);
    expect(genDir(sb, 'applied')).toEqual([]);
  });

  it('refuses a .gen/staging that links out of the repository (a clone can commit one): exit 2, nothing removed', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'applied one', ['src/user.py']);
    expect((await sb.genjob(['work', '--once', '--generator', liveGen(sb)])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    // a directory beside the repository, its entries older than any window
    const victim = join(sb.base, 'victim');
    mkdirSync(join(victim, 'projectA'), { recursive: true });
    writeFileSync(join(victim, 'projectA', 'thesis.tex'), 'precious\n');
    writeFileSync(join(victim, 'notes.txt'), 'keep\n');
    const old = new Date(Date.now() - 40 * 86_400_000);
    for (const p of ['projectA', 'notes.txt']) utimesSync(join(victim, p), old, old);
    const staging = join(sb.repo, '.gen', 'staging');
    rmSync(staging, { recursive: true });
    symlinkSync('../../victim', staging);
    const gen = snapshot(join(sb.repo, '.gen'), ['locks', 'journal.jsonl', 'journal.d']);
    for (const args of [['gc'], ['gc', '--dry-run'], ['gc', '--older-than', '0s']]) {
      const r = await sb.genjob(args);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toBe(
        `genjob: EGJ_BAD_PATH: ${staging}: a symbolic link; genjob writes only inside .gen/'s own directories, never through a link, so nothing was written: make it a real directory (or delete it)\n`,
      );
    }
    expect(readdirSync(victim).sort()).toEqual(['notes.txt', 'projectA']);
    expect(readdirSync(join(victim, 'projectA'))).toEqual(['thesis.tex']);
    expect(snapshot(join(sb.repo, '.gen'), ['locks', 'journal.jsonl', 'journal.d'])).toEqual(gen);
    expect(genDir(sb, 'applied')).toEqual([`${key}.json`]);
  });

  it('exits 2 for a malformed --older-than', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['gc', '--older-than', '30 days']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/^genjob: EGJ_BAD_DURATION: --older-than "30 days"/);
  });
});

describe('genjob cache prune', () => {
  it("removes the host's entries older than the window; --dry-run and a wide window keep them", async () => {
    const sb = await makeSandbox();
    await mintKey(sb, 'one', ['src/user.py']);
    expect((await sb.genjob(['work', '--drain', '--generator', liveGen(sb)])).exitCode).toBe(0);
    const results = join(sb.cache, 'genjob', 'results');
    expect(readdirSync(results)).toHaveLength(1);
    for (const args of [['--dry-run', '--older-than', '0s'], []]) {
      const r = await sb.genjob(['cache', 'prune', '--json', ...args]);
      expect(r.exitCode).toBe(0);
      expect(readdirSync(results)).toHaveLength(1);
    }
    const r = await sb.genjob(['cache', 'prune', '--older-than', '0s', '--json']);
    expect(JSON.parse(r.stdout).entries).toHaveLength(1);
    expect(readdirSync(results)).toEqual([]);
  });
});
