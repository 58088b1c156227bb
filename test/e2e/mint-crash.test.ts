// mint (and remint, which mints the successor) killed (-9) after it published the job file and before its
// `minted` line, through the built CLI: the same command again found the job and said "already minted",
// and the line was lost for good. Now the replay writes it, once: in a later life of the key too (the
// earlier life's line does not count), never for a job a retry queued again, and never twice when two
// processes mint the same job at once (a mint held in that window is waited for, not finished for it).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/store/journal.js';
import { spawnCli, until, workerRepo } from './worker-helpers.js';

const PRELOAD = join(import.meta.dirname, '../helpers/crash-preload.mjs');
const PATH = 'm/a.txt';
/** Kill the command right after it linked a job file into queue/ (before its journal line). */
const AFTER_QUEUE_LINK = { call: 'linkSync', match: '/\\.gen/queue/', arg: 1, when: 'after' };

function box() {
  const { base, root, store } = workerRepo('genjob-mint-crash-', 'exit 0\n', { [PATH]: 'a\n' });
  const env = { ...process.env, XDG_CACHE_HOME: join(base, 'cache') };
  const genjob = (args: string[], crash?: object) =>
    spawnCli(
      root,
      args,
      crash ? { ...env, GENJOB_CRASH: JSON.stringify(crash) } : env,
      crash ? PRELOAD : undefined,
    );
  const mint = (crash?: object) => genjob(['mint', '--json', '-m', 'Bump the letter', PATH], crash);
  const lines = (key: string, event = 'minted') => readJournal(store, key).filter((e) => e.event === event);
  const queued = (key: string) => existsSync(store.layout.jobFile('queue', key));
  return { base, root, store, genjob, mint, lines, queued };
}

type Json = Record<string, unknown>;
const json = (r: { stdout: unknown }) => JSON.parse(String(r.stdout)) as Json;

/** The key a mint killed after its link left queued, with no `minted` line. */
async function killedMint(b: ReturnType<typeof box>): Promise<string> {
  const killed = await b.mint(AFTER_QUEUE_LINK);
  expect(killed.signal, String(killed.stderr)).toBe('SIGKILL');
  const names = b.store.fs.readdirSync(b.store.layout.dir('queue'));
  expect(names).toHaveLength(1);
  return names[0]!.replace(/\.json$/, '');
}

describe('mint killed after its job file, before its minted line', () => {
  it('the same mint again writes the line, once; status and show see the job', async () => {
    const b = box();
    const key = await killedMint(b);
    expect(b.lines(key)).toEqual([]);
    const again = await b.genjob(['mint', '-m', 'Bump the letter', PATH]);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(String(again.stdout)).toBe(key);
    expect(String(again.stderr)).toContain(
      `minted: 1 path(s) → .gen/queue/${key}.json (an interrupted mint finished)`,
    );
    expect(b.lines(key)).toEqual([expect.objectContaining({ key, inputs: 1 })]);
    // once journalled, the same mint is the plain "already minted" and writes nothing
    const third = await b.genjob(['mint', '-m', 'Bump the letter', PATH]);
    expect(third.exitCode, String(third.stderr)).toBe(0);
    expect(String(third.stderr)).toContain('already minted (state: queue)');
    expect(b.lines(key)).toHaveLength(1);
    const status = await b.genjob(['status', '--json']);
    expect(status.exitCode, String(status.stderr)).toBe(0);
    expect(String(status.stdout)).toContain(key);
    const show = await b.genjob(['show', key]);
    expect(show.exitCode, String(show.stderr)).toBe(0);
    expect(String(show.stdout)).toMatch(/state {5}queue/);
    expect(String(show.stdout).match(/ minted$/gm)).toHaveLength(1);
  });

  it('with --each, the replay says which job it finished', async () => {
    const b = box();
    // --each-file takes tracked files
    await execa('git', ['init', '-q'], { cwd: b.root });
    await execa('git', ['add', PATH], { cwd: b.root });
    const list = join(b.base, 'list.txt');
    writeFileSync(list, `${PATH}\n`);
    const each = (crash?: object, json = false) =>
      b.genjob(['mint', ...(json ? ['--json'] : []), '-m', 'Bump {path}', '--each-file', list], crash);
    const killed = await each(AFTER_QUEUE_LINK);
    expect(killed.signal, String(killed.stderr)).toBe('SIGKILL');
    const [name] = b.store.fs.readdirSync(b.store.layout.dir('queue'));
    const key = name!.replace(/\.json$/, '');
    const again = await each(undefined, true);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(json(again)).toMatchObject({ minted: 1, jobs: [{ key, minted: true, finished: true }] });
    expect(b.lines(key)).toHaveLength(1);
    const third = await each();
    expect(third.exitCode).toBe(0);
    expect(String(third.stderr)).toContain(`${PATH}: ${key.slice(0, 12)} (already minted, state: queue)`);
    expect(b.lines(key)).toHaveLength(1);
    // its second life: the first life's line, read once for all the jobs, does not count for it
    expect((await b.genjob(['drop', key])).exitCode).toBe(0);
    expect((await each(AFTER_QUEUE_LINK)).signal).toBe('SIGKILL');
    const fourth = await each();
    expect(fourth.exitCode, String(fourth.stderr)).toBe(0);
    expect(String(fourth.stderr)).toContain(`${PATH}: ${key.slice(0, 12)} (an interrupted mint finished)`);
    expect(b.lines(key)).toHaveLength(2);
  });

  it("in the key's second life (minted, dropped, minted again), though the first life's line is there", async () => {
    const b = box();
    const first = await b.mint();
    const key = String(json(first).key);
    expect((await b.genjob(['drop', key])).exitCode).toBe(0);
    expect(b.lines(key)).toHaveLength(1);
    expect(await killedMint(b)).toBe(key);
    expect(b.lines(key)).toHaveLength(1);
    const again = await b.mint();
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(json(again)).toMatchObject({ minted: true, finished: true });
    expect(b.lines(key)).toHaveLength(2);
    expect((await b.mint()).exitCode).toBe(0);
    expect(b.lines(key)).toHaveLength(2);
  });

  it('a job a retry queued again from dead/ is not taken for a killed mint: minting it writes no line', async () => {
    const b = box();
    const key = String(json(await b.mint()).key);
    expect((await b.genjob(['cancel', key])).exitCode).toBe(0);
    const retried = await b.genjob(['retry', key]);
    expect(retried.exitCode, String(retried.stderr)).toBe(0);
    expect(b.queued(key)).toBe(true);
    const again = await b.mint();
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(json(again)).toMatchObject({ minted: false, state: 'queue' });
    expect(json(again).finished).toBeUndefined();
    expect(b.lines(key)).toHaveLength(1);
  });

  it('two mints of the same job at once write one minted line: one held between its link and its line is waited for', async () => {
    const b = box();
    // the first is held for a while right after its link; the second starts once the job file is there
    const held = b.mint({ ...AFTER_QUEUE_LINK, pauseMs: 1500 });
    let key = '';
    await until(
      'the held mint to link its job file',
      () => {
        const names = b.store.fs.readdirSync(b.store.layout.dir('queue'));
        key = names[0]?.replace(/\.json$/, '') ?? '';
        return key !== '';
      },
      500,
    );
    const second = await b.mint();
    const first = await held;
    expect(first.exitCode, String(first.stderr)).toBe(0);
    expect(second.exitCode, String(second.stderr)).toBe(0);
    expect(json(first)).toMatchObject({ key, minted: true });
    expect(json(first).finished).toBeUndefined();
    expect(json(second)).toMatchObject({ key, minted: false, state: 'queue' });
    expect(b.lines(key)).toHaveLength(1);
  });
});

describe('mint --each reads the journal once for the jobs minted already', () => {
  it('and still looks again under the lock before it writes a line: one a held mint writes meanwhile is seen', async () => {
    const b = box();
    writeFileSync(join(b.root, 'm/b.txt'), 'b\n');
    await execa('git', ['init', '-q'], { cwd: b.root });
    await execa('git', ['add', 'm'], { cwd: b.root });
    const list = join(b.base, 'list.txt');
    writeFileSync(list, 'm/a.txt\nm/b.txt\n');
    // m/a.txt's job is there already, so --each reads the journal at it, before m/b.txt's line exists
    expect((await b.genjob(['mint', '-m', 'Bump m/a.txt', 'm/a.txt'])).exitCode).toBe(0);
    const held = b.genjob(['mint', '--json', '-m', 'Bump m/b.txt', 'm/b.txt'], {
      ...AFTER_QUEUE_LINK,
      pauseMs: 1500,
    });
    await until(
      'the held mint to link its job file',
      () => b.store.fs.readdirSync(b.store.layout.dir('queue')).length === 2,
      500,
    );
    const each = await b.genjob(['mint', '--json', '-m', 'Bump {path}', '--each-file', list]);
    const first = await held;
    expect(first.exitCode, String(first.stderr)).toBe(0);
    expect(each.exitCode, String(each.stderr)).toBe(0);
    const key = String(json(first).key);
    expect(json(each)).toMatchObject({
      minted: 0,
      jobs: [{ path: 'm/a.txt' }, { path: 'm/b.txt', key, minted: false }],
    });
    expect(b.lines(key)).toHaveLength(1);
  });
});

describe('remint killed after its successor was published, before its minted line', () => {
  it("remint again writes the successor's minted line once, and supersedes the old job", async () => {
    const b = box();
    const key = String(json(await b.mint()).key);
    writeFileSync(join(b.root, PATH), 'b\n');
    const killed = await b.genjob(['remint', key], AFTER_QUEUE_LINK);
    expect(killed.signal, String(killed.stderr)).toBe('SIGKILL');
    const successor = b.store.fs
      .readdirSync(b.store.layout.dir('queue'))
      .map((n) => n.replace(/\.json$/, ''))
      .find((k) => k !== key)!;
    expect(successor).toMatch(/^[0-9a-f]{64}$/);
    expect(b.lines(successor)).toEqual([]);
    const again = await b.genjob(['remint', key, '--json']);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(json(again)).toMatchObject({ key, successor });
    expect(b.lines(successor)).toHaveLength(1);
    expect(b.lines(successor, 'reminted')).toHaveLength(1);
    expect(b.lines(key, 'superseded')).toHaveLength(1);
    expect(b.queued(key)).toBe(false);
  });
});
