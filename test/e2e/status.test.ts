// status: received broken into ok/aborted/rejected, a stale marker, the host of the last attempt,
// dead jobs one row each with their reason, --state, --limit/--all, colour only when asked or on a terminal, and on a deep
// queue only the rows it shows are read.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RANK_BUDGET } from '../../src/commands/status.js';
import { makeSandbox, mintKey } from './helpers.js';

describe('status', () => {
  it('breaks received down, marks stale jobs and lists each dead job once with its reason', async () => {
    const sb = await makeSandbox();
    const gen = sb.script(
      'gen.sh',
      'case "$GENJOB_INSTRUCTION" in Fail*) echo no >&2; exit 3;; esac; echo x >> README.md',
    );
    const ok = await mintKey(sb, 'Works', ['README.md']);
    const failed = await mintKey(sb, 'Fails', ['README.md']);
    await sb.genjob(['work', '--drain', '--quiet', '--max-attempts', '1', '--generator', gen]);
    const gone = await mintKey(sb, 'Goes away', ['src/user.py']);
    await sb.genjob(['work', gone, '--quiet', '--generator', gen]);
    await sb.genjob(['drop', gone, '--reason', 'not needed']); // job, receipt and out/ in dead/: one dead job
    const stale = await mintKey(sb, 'Goes stale', ['tests/test_user.py']);
    writeFileSync(join(sb.repo, 'tests/test_user.py'), 'changed\n');

    const out = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(out.counts).toEqual({ queue: 1, running: 0, received: 2, applied: 0, reverted: 0, dead: 1 });
    expect(out.received).toEqual({ ok: 1, aborted: 1, rejected: 0 });
    const byKey = Object.fromEntries(out.jobs.map((j: { key: string }) => [j.key, j]));
    expect(byKey[stale]).toMatchObject({ state: 'queue', stale: true });
    expect(byKey[ok]).toMatchObject({ state: 'received', receipt: 'ok', stale: false });
    expect(byKey[failed]).toMatchObject({ state: 'received', receipt: 'aborted' });
    expect(byKey[gone]).toMatchObject({
      state: 'dead',
      reason: 'EGJ_DROPPED: dropped by the user: not needed',
    });

    const human = (await sb.genjob(['status'])).stdout;
    expect(human).toMatch(
      /^queue 1 {2}running 0 {2}received 2 \(ok 1, aborted 1, rejected 0\) {2}applied 0 {2}reverted 0 {2}dead 1\n/,
    );
    expect(human).toContain(`${stale.slice(0, 12)}  queue `);
    expect(human).toMatch(/\(stale\) Goes stale\n/);
    expect(human).toMatch(
      new RegExp(`${gone.slice(0, 12)}  dead .*EGJ_DROPPED: dropped by the user: not needed`),
    );
    expect(human).not.toContain('\u001b[');

    const onlyDead = JSON.parse((await sb.genjob(['status', '--json', '--state', 'dead'])).stdout);
    expect(onlyDead.jobs.map((j: { key: string }) => j.key)).toEqual([gone]);
    expect((await sb.genjob(['status', '--state', 'nosuch'])).exitCode).toBe(2);

    expect((await sb.genjob(['status', '--color=always'])).stdout).toContain('\u001b[');
    expect(
      (await sb.genjob(['status', '--color=never'], { env: { FORCE_COLOR: '1' } })).stdout,
    ).not.toContain('\u001b[');
    expect((await sb.genjob(['status'], { env: { FORCE_COLOR: '1', NO_COLOR: '1' } })).stdout).not.toContain(
      '\u001b[',
    );
  });

  it("names the host of each job's last attempt in a HOST column (`host` in --json)", async () => {
    const sb = await makeSandbox();
    const gen = sb.script('gen.sh', 'echo x >> README.md');
    const done = await mintKey(sb, 'Done here', ['README.md']);
    await sb.genjob(['work', done, '--quiet', '--generator', gen]);
    const waiting = await mintKey(sb, 'Not tried yet', ['src/user.py']);
    const out = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    const byKey = Object.fromEntries(out.jobs.map((j: { key: string }) => [j.key, j]));
    expect(byKey[done]).toMatchObject({ state: 'received', epoch: 1, host: 'local' });
    expect(byKey[waiting]).toMatchObject({ state: 'queue', epoch: 0, host: null });
    const lines = (await sb.genjob(['status'])).stdout.trimEnd().split('\n');
    const header = lines.findIndex((l) => l.startsWith('KEY '));
    expect(lines[header]).toMatch(/ RECEIPT {3}HOST {3}INSTRUCTION$/);
    const cell = (key: string) =>
      lines.find((l) => l.startsWith(key.slice(0, 12)))!.slice(lines[header]!.indexOf('HOST'));
    expect(cell(done)).toMatch(/^local {2}Done here$/);
    expect(cell(waiting)).toMatch(/^- {6}Not tried yet$/);
  });

  it('reads a forged attempt record (torn, another shape, a FIFO; a branch may commit .gen/) as no attempt: status, show and report do not crash', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('gen.sh', 'echo x >> README.md');
    const key = await mintKey(sb, 'Done here', ['README.md']);
    await sb.genjob(['work', key, '--quiet', '--generator', gen]);
    const attempt = join(sb.repo, '.gen', 'attempts', key, '1.json');
    for (const forge of [
      () => writeFileSync(attempt, '{"key":'),
      () => writeFileSync(attempt, '{"epoch":1}'),
      () => writeFileSync(attempt, JSON.stringify({ epoch: 1, worker: 'w', destination: 'x' })),
      () => execFileSync('mkfifo', [attempt]),
    ]) {
      rmSync(attempt, { force: true });
      forge();
      const status = await sb.genjob(['status', '--json']);
      expect(status.stderr).toBe('');
      expect(JSON.parse(status.stdout).jobs[0]).toMatchObject({ key, epoch: 1, host: null });
      const shown = await sb.genjob(['show', key]);
      expect(shown.stderr).toBe('');
      expect(shown.exitCode).toBe(0);
      expect(shown.stdout).toContain('state     received');
      const report = await sb.genjob(['report', '--out', join(sb.base, 'report')]);
      expect(report.stderr).toBe('');
      expect(report.exitCode).toBe(0);
    }
  });

  it('fits the instruction to the terminal width', async () => {
    const sb = await makeSandbox();
    await mintKey(sb, `Long ${'word '.repeat(40)}`, ['README.md']);
    const r = await sb.genjob(['status'], { env: { COLUMNS: '80' } });
    const row = r.stdout.trimEnd().split('\n').at(-1)!;
    expect(row.length).toBe(80);
    expect(row.endsWith('…')).toBe(true);
  });

  it('on a deep queue counts everything and reads only the most recent rows (--limit, --all)', async () => {
    const sb = await makeSandbox();
    const queue = join(sb.repo, '.gen', 'queue');
    const oldest = await mintKey(sb, 'The oldest', ['README.md']); // makes .gen/
    // 300 older files that are not even JSON: listing counts them; reading one would show it
    for (let i = 0; i < 300; i++)
      writeFileSync(join(queue, `${i.toString(16).padStart(64, '0')}.json`), 'not json');
    const newer = await mintKey(sb, 'The newer', ['src/user.py']);
    const newest = await mintKey(sb, 'The newest', ['tests/test_user.py']);
    const def = JSON.parse((await sb.genjob(['status', '--json', '--limit', '2'])).stdout);
    expect(def.counts.queue).toBe(303);
    expect(def).toMatchObject({ total: 303, shown: 2 });
    expect(def.jobs.map((j: { key: string }) => j.key).sort()).toEqual([newer, newest].sort());
    expect(def.jobs.map((j: { key: string }) => j.key)).not.toContain(oldest);
    // the default shows the 50 most recent and says how many more there are
    const human = (await sb.genjob(['status'])).stdout;
    expect(human.trimEnd().split('\n').at(-1)).toBe(
      '… 253 older job(s) not shown (--all lists every one, --limit N more or fewer)',
    );
    const all = JSON.parse((await sb.genjob(['status', '--json', '--all'])).stdout);
    expect(all.shown).toBe(303);
    expect(
      all.jobs.filter((j: { instruction: string }) => j.instruction === '(unreadable job file)'),
    ).toHaveLength(300);
  });

  it("on a state deeper than the rank budget counts it, shows the jobs of the journal's recent events, and ranks it all only when asked (no stat per job)", async () => {
    const sb = await makeSandbox();
    const received = await mintKey(sb, 'Gets received', ['README.md']);
    await sb.genjob(['work', '--drain', '--quiet', '--generator', 'true']);
    const queue = join(sb.repo, '.gen', 'queue');
    for (let i = 0; i <= RANK_BUDGET; i++)
      writeFileSync(join(queue, `${i.toString(16).padStart(64, '0')}.json`), 'not json');
    const newest = await mintKey(sb, 'The newest', ['src/user.py']);
    const deep = RANK_BUDGET + 2;

    const def = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(def.counts.queue).toBe(deep);
    // the minted job is in the journal's tail: shown; the files written behind genjob's back are not
    expect(def.unranked).toEqual({ queue: deep - 1 });
    expect(def.jobs.map((j: { key: string }) => j.key).sort()).toEqual([received, newest].sort());
    expect(def).toMatchObject({ total: deep + 1, shown: 2 });
    expect((await sb.genjob(['status'])).stdout.trimEnd().split('\n').at(-1)).toBe(
      `… ${deep - 1} queue job(s) not ranked: over ${RANK_BUDGET} in queue/, only those of the journal's recent events are (--state queue ranks them all, a stat each)`,
    );
    // asked for by name, the deep state is ranked: its newest job comes first
    const byName = JSON.parse(
      (await sb.genjob(['status', '--json', '--state', 'queue', '--limit', '1'])).stdout,
    );
    expect(byName.jobs.map((j: { key: string }) => j.key)).toEqual([newest]);
    expect(byName.unranked).toEqual({});
  });
});

describe('status after retry and in order', () => {
  it('says what dead/ keeps for a retried job (its count of dead jobs stays 0)', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Fails once', ['README.md']);
    await sb.genjob(['work', '--once', '--quiet', '--generator', 'exit 3']);
    expect((await sb.genjob(['retry', key])).exitCode).toBe(0);
    const lines = (await sb.genjob(['status'])).stdout.split('\n');
    expect(lines[0]).toMatch(/ {2}dead 0$/);
    expect(lines[1]).toBe(
      `dead/ also keeps 2 item(s) of jobs that are not dead: receipts and outputs of retried or superseded attempts, refused material (ls ${join(sb.repo, '.gen', 'dead')})`,
    );
    const json = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(json).toMatchObject({ counts: { queue: 1, dead: 0 }, dead_kept: 2 });
  });

  it('forged: does not count or list job files not named by a key, and names them', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'The real one', ['README.md']);
    const bytes = readFileSync(join(sb.repo, '.gen', 'queue', `${key}.json`));
    // what a branch can commit: a copy of a real job under a name that is no key, one with a terminal escape
    writeFileSync(join(sb.repo, '.gen', 'queue', 'EVIL.json'), bytes);
    writeFileSync(join(sb.repo, '.gen', 'queue', 'x\u001b[2J.json'), bytes);
    const json = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(json.counts.queue).toBe(1);
    expect(json.jobs.map((j: { key: string }) => j.key)).toEqual([key]);
    expect([...json.not_jobs].sort()).toEqual(['queue/EVIL.json', 'queue/x\u001b[2J.json']);
    const human = (await sb.genjob(['status'])).stdout;
    expect(human).toMatch(/^queue 1 /);
    expect(human).toContain('2 job file(s) not named by a key, so no job genjob minted, not counted: ');
    expect(human).toContain('queue/EVIL.json');
    expect(human).not.toContain('\u001b');
  });

  it('does not count as dead a job cancelled and then retried (it is queued)', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Changed my mind twice', ['README.md']);
    expect((await sb.genjob(['cancel', key])).exitCode).toBe(0);
    expect((await sb.genjob(['retry', key])).exitCode).toBe(0);
    const json = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(json.counts).toMatchObject({ queue: 1, dead: 0 });
    expect(json.dead_kept).toBe(1); // the cancelled record, kept
    expect(json.jobs.map((j: { key: string; state: string }) => [j.key, j.state])).toEqual([[key, 'queue']]);
  });

  it('lists the jobs newest first, whatever their state or key', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('gen.sh', 'echo x >> "$(ls src/*.py | head -n 1)"');
    const keys: string[] = [];
    for (const [i, path] of ['src/user.py', 'tests/test_user.py', 'README.md'].entries()) {
      keys.push(await mintKey(sb, `Job ${i}`, [path]));
      // the first job is worked (received) after the others were minted: it is the newest
      if (i === 2) await sb.genjob(['work', keys[0]!, '--quiet', '--generator', gen]);
    }
    const json = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(json.jobs.map((j: { key: string }) => j.key)).toEqual([keys[0], keys[2], keys[1]]);
    const rows = (await sb.genjob(['status'])).stdout.split('\n').filter((l) => /^[0-9a-f]{12} /.test(l));
    expect(rows.map((r) => r.slice(0, 12))).toEqual([keys[0], keys[2], keys[1]].map((k) => k!.slice(0, 12)));
  });
});
